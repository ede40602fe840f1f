package openaiwire

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// viaJSON is what encoding/json writes for v (HTML escaping off, no
// newline): what appendChunk must equal.
func viaJSON(t *testing.T, v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func FuzzChunkEncoding(f *testing.F) {
	f.Add("chatcmpl-1", "gpt-4o", "assistant", "Hello <b> & \"you\"\n\t\u2028\x01\xff", "call_1", "get_weather", `{"city":"Paris"}`, int64(1700000000), 0, uint8(0xff))
	f.Add("", "", "", "", "", "", "", int64(-1), -3, uint8(0))
	f.Add("x", "m", "", "\\\b\f\r\u2029é日本", "", "", "", int64(0), 2, uint8(0x15))
	f.Add("", "", "", `a\"\\\n\t\b\f\r\u0000\u001f\u2028\u2029é`, "", "", "", int64(0), 0, uint8(0))
	f.Add("", "", "", `\u0041\/\u000a\u001F\u007f\ud800`, "", "", "", int64(0), 0, uint8(0))
	f.Fuzz(func(t *testing.T, id, model, role, content, callID, name, args string, created int64, index int, flags uint8) {
		c := &ChatCompletionChunk{ID: id, Object: ObjectChatCompletionChunk, Created: created, Model: model}
		if flags&1 != 0 {
			c.Choices = []ChunkChoice{}
		}
		if flags&2 != 0 {
			ch := ChunkChoice{Index: index, Delta: Delta{Role: role}}
			if flags&4 != 0 {
				ch.Delta.Content = &content
			}
			if flags&8 != 0 {
				ch.Delta.ToolCalls = []ToolCallDelta{{Index: index, ID: callID, Type: "function", Function: FunctionDelta{Name: name, Arguments: args}}, {Index: index + 1, Function: FunctionDelta{Arguments: content}}}
			}
			if flags&16 != 0 {
				ch.Logprobs = json.RawMessage("null")
			}
			if flags&32 != 0 {
				ch.FinishReason = Finish(role)
			}
			c.Choices = append(c.Choices, ch, ChunkChoice{Index: index + 1, Delta: Delta{Content: &args}})
		}
		got, ok := appendChunk([]byte("prefix"), c)
		if !ok {
			t.Fatal("appendChunk refused a chunk without usage or log probabilities")
		}
		want := append([]byte("prefix"), viaJSON(t, c)...)
		if !bytes.Equal(got, want) {
			t.Fatalf("appendChunk:\n%s\nencoding/json:\n%s", got, want)
		}
		var e Encoder
		if got, _ := e.Append(nil, &content); !bytes.Equal(got, viaJSON(t, content)) {
			t.Fatalf("Encoder.Append(*string) = %s, encoding/json %s", got, viaJSON(t, content))
		}
		if lit := AppendString(nil, content); utf8.ValidString(content) && !Canonical(string(lit)) {
			t.Fatalf("Canonical(%s) = false for AppendString's own", lit)
		}
		// Any literal Canonical takes is AppendString's of what it denotes.
		if lit := `"` + content + `"`; Canonical(lit) {
			var s string
			if err := json.Unmarshal([]byte(lit), &s); err != nil {
				t.Fatalf("Canonical(%s), but it does not decode: %v", lit, err)
			}
			if got := AppendString(nil, s); string(got) != lit {
				t.Fatalf("Canonical(%s), but AppendString writes %s", lit, got)
			}
		}
	})
}

// A chunk with usage, or log probabilities other than null, goes to
// encoding/json; the Encoder's answer is the same either way.
func TestChunkEncodingFallback(t *testing.T) {
	text := "hi"
	for _, c := range []*ChatCompletionChunk{
		{ID: "a", Object: ObjectChatCompletionChunk, Choices: []ChunkChoice{}, Usage: &Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}},
		{ID: "b", Object: ObjectChatCompletionChunk, Choices: []ChunkChoice{{Delta: Delta{Content: &text}, Logprobs: json.RawMessage(`{"content":[]}`)}}},
		{ID: "c", Object: ObjectChatCompletionChunk, Choices: []ChunkChoice{{Delta: Delta{Content: &text}, Logprobs: json.RawMessage("null")}}},
	} {
		var e Encoder
		got, err := e.Append(nil, c)
		if err != nil {
			t.Fatal(err)
		}
		if want := viaJSON(t, c); !bytes.Equal(got, want) {
			t.Errorf("Encoder.Append = %s, want %s", got, want)
		}
	}
}

func BenchmarkChunkEncoding(b *testing.B) {
	text := "Hello there, how are you today?"
	c := &ChatCompletionChunk{ID: "chatcmpl-abc123", Object: ObjectChatCompletionChunk, Created: 1700000000, Model: "claude-sonnet",
		Choices: []ChunkChoice{{Delta: Delta{Content: &text}, Logprobs: json.RawMessage("null")}}}
	var e Encoder
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = e.Append(buf[:0], c)
	}
}

// TestCanonical: the literals AppendString writes, and no other.
func TestCanonical(t *testing.T) {
	for lit, want := range map[string]bool{
		`""`: true, `"abc"`: true, `"a\"b\\c"`: true, `"\b\f\n\r\t"`: true, `"\u0000\u001f\u000b"`: true,
		`"\u2028\u2029"`: true, `"é日本<&>"`: true, "\"\x7f\"": true,
		``: false, `"`: false, `abc`: false, `"\u0008"`: false, `"\u000a"`: false, `"\u001F"`: false, `"\u0041"`: false,
		`"\/"`: false, `"\ud83d\ude00"`: false, `"\u007f"`: false, `"\ufffd"`: false, `"\x"`: false, `"\u00"`: false, `"a\"`: false,
		"\"\n\"": false, "\"\xff\"": false, "\"\u2028\"": false, "\"a\"b\"": false,
	} {
		if got := Canonical(lit); got != want {
			t.Errorf("Canonical(%q) = %v, want %v", lit, got, want)
		}
	}
}

// TestPlain8: every byte value at every position, among neighbours at
// the edges of what is plain.
func TestPlain8(t *testing.T) {
	for _, fill := range []byte{'a', ' ', '~', 0x7f, '!', '#', '[', ']'} {
		for at := range 8 {
			for v := range 256 {
				b := bytes.Repeat([]byte{fill}, 8)
				b[at] = byte(v)
				want := v >= 0x20 && v < 0x80 && v != '"' && v != '\\'
				if got := plain8(string(b)); got != want {
					t.Fatalf("plain8(%q) = %v, want %v", b, got, want)
				}
			}
		}
	}
}
