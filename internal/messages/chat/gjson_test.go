package chat

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
	"github.com/llmrouter/llmrouter/internal/outcome"
)

// gjsonChunk is Chunk as it was written before its walks: each level of
// the chunk read with gjson's ForEach and Get. Chunk must write the same
// bytes for every valid JSON payload.
func (e *Events) gjsonChunk(dst, payload []byte) ([]byte, error) {
	// payload is valid JSON (provider.Stream's contract: the adapter
	// checked it, so text is copied as the chunk wrote it); it is not
	// modified during Chunk, and nothing read from it is kept but
	// copies.
	doc := gjson.Parse(unsafeString(payload))
	if !doc.IsObject() {
		return dst, errBadChunk
	}
	if !e.started {
		dst = e.start(dst, doc.Get("id").Str)
	}
	var choices gjson.Result
	doc.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "choices":
			choices = v
		case "usage":
			// A usage chunk (choices empty) comes last when asked for.
			e.usage.gjsonRead(v)
		}
		return true
	})
	choices.ForEach(func(_, c gjson.Result) bool {
		if c.Get("index").Int() == 0 { // one choice is asked for
			dst = e.gjsonChoice(dst, c)
		}
		return true
	})
	return dst, nil
}

// gjsonChoice is choice with gjson: it appends the events for one
// choice's delta and remembers its finish reason.
func (e *Events) gjsonChoice(dst []byte, c gjson.Result) []byte {
	c.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "delta":
			v.ForEach(func(k, v gjson.Result) bool {
				switch k.Str {
				case "content", "refusal":
					if v.Type == gjson.String && len(v.Raw) > 2 {
						dst = e.text(dst, v.Raw)
					}
				case "tool_calls":
					v.ForEach(func(_, tc gjson.Result) bool {
						dst = e.gjsonCall(dst, tc)
						return true
					})
				}
				return true
			})
		case "finish_reason":
			if v.Type == gjson.String && v.Str != "" {
				e.stop = stopReason(v.Str, false) // a constant: payload is reused
			}
		}
		return true
	})
	return dst
}

// gjsonCall is call with gjson: it appends a piece of a tool call: a new
// call (another index, or another id) closes the open block and opens a
// tool_use block; its arguments go out as input_json_delta.
func (e *Events) gjsonCall(dst []byte, tc gjson.Result) []byte {
	var idx, id, fn gjson.Result
	tc.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "index":
			idx = v
		case "id":
			id = v
		case "function":
			fn = v
		}
		return true
	})
	i := idx.Int()
	newCall := e.open < 0 || !e.tool ||
		idx.Exists() && i != e.callIdx ||
		id.Str != "" && id.Str != e.callID
	if newCall {
		if e.called(i) && (id.Str == "" || id.Str == e.callID) {
			return dst // a later piece of a call whose block is closed
		}
		dst = e.closeBlock(dst)
		dst = e.blockStart(dst, true)
		dst = append(dst, `,"content_block":{"type":"tool_use","id":"`...)
		dst = appendToolID(dst, id.Str)
		dst = append(dst, `","name":`...)
		dst = str(dst, fn.Get("name").Str)
		dst = append(dst, ",\"input\":{}}}\n\n"...)
		e.callIdx, e.callID, e.calls = i, strings.Clone(id.Str), true
		e.seen = append(e.seen, i)
	}
	args := fn.Get("arguments")
	switch {
	case args.Type == gjson.String && len(args.Raw) > 2:
	case args.IsObject():
		// A server that sends the arguments whole, as an object.
	default:
		return dst
	}
	dst = e.deltaHead(dst)
	dst = append(dst, `,"delta":{"type":"input_json_delta","partial_json":`...)
	if args.Type == gjson.String {
		dst = append(dst, args.Raw...) // a JSON string literal, as for text
	} else {
		dst = str(dst, args.Raw)
	}
	return append(dst, "}}\n\n"...)
}

// gjsonAnswer is Answer as it was written before its walks: each field
// read with gjson's Get. Answer must write the same bytes for every
// answer.
func (t *Translation) gjsonAnswer(chat []byte) ([]byte, error) {
	if !jsoncheck.Valid(chat) {
		return nil, errNotChat
	}
	// chat is not modified while doc is in use.
	doc := gjson.Parse(unsafeString(chat))
	if !doc.IsObject() {
		return nil, errNotChat
	}
	var choice gjson.Result
	if choices := doc.Get("choices"); choices.IsArray() {
		choices.ForEach(func(_, c gjson.Result) bool {
			choice = c
			return false
		})
	}
	if !choice.IsObject() {
		return nil, errNoChoice
	}
	msg := choice.Get("message")
	b := make([]byte, 0, 256+len(chat))
	b = append(b, `{"id":"`...)
	b = appendMessageID(b, doc.Get("id").Str)
	b = append(b, `","type":"message","role":"assistant","model":`...)
	b = str(b, t.model)
	b = append(b, `,"content":[`...)
	n := 0
	// Refusal: OpenAI's own models put a refusal there instead of content.
	for _, key := range [...]string{"content", "refusal"} {
		if s := msg.Get(key); s.Type == gjson.String && s.Str != "" {
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = append(b, `{"type":"text","text":`...)
			b = str(b, s.Str)
			b = append(b, '}')
		}
	}
	calls := 0
	msg.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
		fn := tc.Get("function")
		if !fn.IsObject() {
			return true // not a function call
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		calls++
		b = append(b, `{"type":"tool_use","id":"`...)
		b = appendToolID(b, tc.Get("id").Str)
		b = append(b, `","name":`...)
		b = str(b, fn.Get("name").Str)
		b = append(b, `,"input":`...)
		b = gjsonInput(b, fn.Get("arguments"))
		b = append(b, '}')
		return true
	})
	b = append(b, `],"stop_reason":"`...)
	b = append(b, stopReason(choice.Get("finish_reason").Str, calls > 0)...)
	b = append(b, `","stop_sequence":null,"usage":`...)
	var u usage
	u.gjsonRead(doc.Get("usage"))
	b = u.append(b, true)
	return append(b, '}'), nil
}

// gjsonInput is appendInput with gjson.
func gjsonInput(b []byte, args gjson.Result) []byte {
	raw := args.Raw
	if args.Type == gjson.String {
		raw = args.Str
	}
	in := bytes.TrimSpace(unsafeBytes(raw))
	if len(in) == 0 || in[0] != '{' || !jsoncheck.Valid(in) {
		return append(b, "{}"...)
	}
	return append(b, in...)
}

// gjsonRead is usage.read with gjson.
func (u *usage) gjsonRead(v gjson.Result) {
	if !v.IsObject() {
		return
	}
	prompt := v.Get("prompt_tokens").Int()
	u.cacheRead = max(0, min(prompt, v.Get("prompt_tokens_details.cached_tokens").Int()))
	u.input = max(0, prompt-u.cacheRead)
	u.output = max(0, v.Get("completion_tokens").Int())
	u.known = true
}

// randomID is an id appendRandom made: what two runs cannot share.
var randomID = regexp.MustCompile(`"(toolu_|msg_)[a-zA-Z0-9]{24}"`)

// sameAsGJSON runs chunks through Chunk and gjsonChunk, each on its own
// Events, and fails unless each chunk's events, the error and the end are
// the same bytes (random ids aside). fail ends the streams with Fail.
func sameAsGJSON(t testing.TB, tr *Translation, chunks [][]byte, fail bool) {
	t.Helper()
	ev, ref := tr.Events(), tr.Events()
	same := func(what string, got, want []byte) {
		t.Helper()
		g := randomID.ReplaceAllString(string(got), `"$1random"`)
		w := randomID.ReplaceAllString(string(want), `"$1random"`)
		if g != w {
			t.Fatalf("%s: Chunk wrote\n%s\ngjsonChunk wrote\n%s", what, g, w)
		}
	}
	for _, c := range chunks {
		got, err := ev.Chunk([]byte("x"), c)
		want, refErr := ref.gjsonChunk([]byte("x"), c)
		same(string(c), got, want)
		if (err == nil) != (refErr == nil) {
			t.Fatalf("%s: Chunk's error %v, gjsonChunk's %v", c, err, refErr)
		}
		if err != nil {
			fail = true
			break
		}
	}
	if fail {
		same("Fail", ev.Fail(nil, outcome.Network), ref.Fail(nil, outcome.Network))
		return
	}
	same("End", ev.End(nil), ref.End(nil))
}

// TestChunkAsGJSON: Chunk reads a chunk as gjson does, whatever the
// shape: keys repeated or escaped, a delta before the index, choices an
// object, tool calls a scalar, whitespace anywhere.
func TestChunkAsGJSON(t *testing.T) {
	tests := map[string][]string{
		"text":        {chunk(`{"role":"assistant","content":""}`, ""), chunk(`{"content":"Hel"}`, ""), chunk(`{"content":"lo \"you\"\n\u2028"}`, ""), chunk(`{}`, "stop"), usageChunk},
		"tool calls":  {chunk(call(0, "call_1", "get_weather", `""`), ""), chunk(call(0, "", "", `"{\"city\":"`), ""), chunk(call(1, "call:2", "noop", `"{}"`), ""), chunk(`{}`, "tool_calls")},
		"object args": {`{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":{"x":"\u00e9\n"}}}]}}]}`},
		"late piece":  {chunk(call(0, "call_1", "f", `"{"`), ""), chunk(call(1, "call_2", "g", `"{}"`), ""), chunk(call(0, "", "", `"}"`), "")},
		"keys repeated": {
			`{"id":"a","id":"b","choices":[{"index":0,"delta":{"content":"x"}}],"choices":[{"index":0,"delta":{"content":"y","content":"z","refusal":"r"},"delta":{"content":"w"},"finish_reason":"length","finish_reason":null}],"usage":{"prompt_tokens":5},"usage":null}`,
			`{"choices":[{"index":0,"index":1,"delta":{"tool_calls":[{"index":0,"index":2,"id":"p","id":"q","function":{"name":"n","name":"m","arguments":"{}","arguments":"[]"},"function":{"name":"o","arguments":"\"\""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":3,"id":"r","function":{"name":"n","name":"m","arguments":"{}","arguments":"[]"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":4,"id":"s","function":{"name":"a","arguments":"{}"},"function":{"name":"b"}}]}}]}`,
		},
		"keys escaped": {`{"i\u0064":"\u0061b","ch\u006fices":[{"ind\u0065x":0,"d\u0065lta":{"c\u006fntent":"x","tool_c\u0061lls":[{"\u0069d":"c\u0031","function":{"n\u0061me":"f\u00e9","\u0061rguments":"{}"}}]},"finish_re\u0061son":"to\u006fl_calls"}]}`},
		"delta before index": {
			`{"choices":[{"delta":{"content":"a"},"index":0,"delta":{"content":"b"},"finish_reason":"stop"}]}`,
			`{"choices":[{"delta":{"content":"c"},"index":1},{"finish_reason":"length","delta":{"content":"d"}}]}`,
			`{"choices":[{"delta":{"content":"e"},"index":0,"logprobs":{"content":"no"},"delta":{"content":"f"}}]}`,
		},
		"indexes": {
			`{"choices":[{"index":"0","delta":{"content":"s"}},{"index":0.5,"delta":{"content":"f"}},{"index":-0,"delta":{"content":"m"}},{"index":null,"delta":{"content":"n"}},{"index":true,"delta":{"content":"t"}},{"index":1e0,"delta":{"content":"e"}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":"1","function":{"arguments":"a"}},{"index":1.0,"function":{"arguments":"b"}},{"index":12345678901234567890,"function":{"arguments":"c"}},{"index":-3,"function":{"arguments":"d"}}]}}]}`,
		},
		"choices before the id":   {`{"choices":[{"delta":{"content":"a"}}],"id":"late"}`, `{"choices":[{"delta":{"content":"b"}}]}`},
		"choices, id, choices":    {`{"choices":[{"delta":{"content":"a"}}],"id":"late","choices":[{"delta":{"content":"b"}}],"usage":{"prompt_tokens":2}}`},
		"choices, usage, choices": {`{"id":"x","choices":[{"delta":{"content":"a"},"finish_reason":"length"}],"usage":{"prompt_tokens":7,"completion_tokens":2},"choices":[{"delta":{"tool_calls":[{"id":"c","function":{"name":"f"}}]}}]}`, `{"choices":[{"delta":{"content":"b"}}],"choices":[]}`},
		"choices an object":       {`{"choices":{"a":{"index":0,"delta":{"content":"o"}},"b":"x","c":[{"delta":{"content":"no"}}]}}`},
		"choices scalars":         {`{"choices":"x"}`, `{"choices":null}`, `{"choices":[null,1,"s",[{"delta":{"content":"no"}}]]}`},
		"deltas not objects":      {`{"choices":[{"delta":"x"},{"delta":["content","x"]},{"delta":null}]}`},
		"tool calls scalars":      {`{"choices":[{"delta":{"tool_calls":null}}]}`, `{"choices":[{"delta":{"tool_calls":[null,1,{"function":"f"},{"function":[{"name":"x"}]}]}}]}`, `{"choices":[{"delta":{"tool_calls":{"a":{"id":"z","function":{"name":"g"}}}}}]}`},
		"content not text":        {`{"choices":[{"delta":{"content":1,"refusal":["x"]}}]}`, `{"choices":[{"delta":{"content":"","refusal":"no"}}]}`},
		"whitespace":              {" \t\r\n{ \"id\" : \"w\" , \"choices\" : [ { \"index\" : 0 , \"delta\" : { \"content\" : \"a\\\\\" , \"tool_calls\" : [ { \"id\" : \"t\" , \"function\" : { \"name\" : \"f\" , \"arguments\" : { \"k\" : [ 1 , { } ] } } } ] } , \"finish_reason\" : \"stop\" } ] , \"usage\" : { \"prompt_tokens\" : 3 } } \n"},
		"not chunks":              {`{"choices":[{"delta":{"content":"a"}}]}`, `[1]`},
		"strings with quotes":     {`{"id":"a\\","choices":[{"delta":{"content":"\\\"}\\","tool_calls":[{"id":"\\\"","function":{"name":"\"]}","arguments":"\\"}}]}}]}`},
	}
	tr := translate(t, `{"model":"claude-x","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	for name, chunks := range tests {
		t.Run(name, func(t *testing.T) {
			var bs [][]byte
			for _, c := range chunks {
				if !gjson.Valid(c) {
					t.Fatalf("not JSON: %s", c)
				}
				bs = append(bs, []byte(c))
			}
			sameAsGJSON(t, tr, bs, false)
			sameAsGJSON(t, tr, bs, true)
		})
	}
}

// sameAnswerAsGJSON fails unless Answer and gjsonAnswer write the same
// bytes (random ids aside), or both refuse.
func sameAnswerAsGJSON(t testing.TB, tr *Translation, chat []byte) {
	t.Helper()
	got, err := tr.Answer(chat)
	want, refErr := tr.gjsonAnswer(chat)
	if err != refErr {
		t.Fatalf("%s: Answer's error %v, gjsonAnswer's %v", chat, err, refErr)
	}
	g := randomID.ReplaceAllString(string(got), `"$1random"`)
	w := randomID.ReplaceAllString(string(want), `"$1random"`)
	if g != w {
		t.Fatalf("%s: Answer wrote\n%s\ngjsonAnswer wrote\n%s", chat, g, w)
	}
}

// TestAnswerAsGJSON: Answer reads a chat completion as gjson's Get does,
// whatever the shape.
func TestAnswerAsGJSON(t *testing.T) {
	tr := translate(t, `{"model":"claude-x","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
	for _, chat := range []string{
		`{"id":"chatcmpl-abc","object":"chat.completion","created":1,"model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"Hello."},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`,
		`{"id":"a","id":"b","choices":[{"message":{"content":"x","content":"y","refusal":"no\u0021","tool_calls":[{"id":"c.1","function":{"name":"f","name":"g","arguments":"{\"a\":1}","arguments":"{}"},"function":{"name":"h"}},{"function":"f"},null,7,{"id":"d","function":{"arguments":{"k":[1,"\u2028"]}}},{"function":{"name":"i","arguments":" {\"x\":[]} "}},{"function":{"name":"j","arguments":"[1]"}},{"function":{"name":"k","arguments":"{\"a\""}}]},"message":{"content":"z"},"finish_reason":"stop","finish_reason":"length"}],"choices":[],"usage":{"prompt_tokens":9,"prompt_tokens":1,"prompt_tokens_details":{"cached_tokens":4,"cached_tokens":2},"completion_tokens":"3"},"usage":null}`,
		`{"\u0069d":"e","ch\u006fices":[{"m\u0065ssage":{"c\u006fntent":"\u00e9\n","tool_c\u0061lls":{"a":{"function":{"n\u0061me":"f","arguments":"{}"}}}},"finish_re\u0061son":"to\u006fl_calls"}],"us\u0061ge":{"prompt_t\u006fkens":5.0,"completion_tokens":-2,"prompt_tokens_details":{"cached_tokens":9}}}`,
		`{"choices":[{"message":"x","finish_reason":7}]}`,
		`{"choices":[{"message":[{"content":"no"}]}],"usage":{"prompt_tokens":1e2,"prompt_tokens_details":[{"cached_tokens":1}]}}`,
		`{"choices":[{"message":{"content":"","refusal":null,"tool_calls":null}}],"usage":[]}`,
		`{"choices":[{"message":{"tool_calls":[{"function":{"name":"f"}}]},"finish_reason":"stop"}]}`,
		` {"choices" : [ { "message" : { "content" : "a" } } , 1 ] } `,
		`{"choices":[1]}`, `{"choices":{"0":{}}}`, `{"choices":[]}`, `{}`, `[1]`, `"x"`, `{"choices":`, ``,
	} {
		sameAnswerAsGJSON(t, tr, []byte(chat))
	}
}
