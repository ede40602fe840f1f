package jsoncheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCheck(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	deepObj := func(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }
	tests := []struct {
		name   string
		doc    string
		reason string // "" means valid
		key    string
	}{
		{"object", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "", ""},
		{"whitespace around", " \t\r\n{ \"a\" : [ 1 , 2.5e-3 , -0 , true , false , null ] }\n ", "", ""},
		{"scalar", `"x"`, "", ""},
		{"number", `-12.5E+10`, "", ""},
		{"escapes", `{"a":"\" \\ \/ \b \f \n \r \t \u00e9 \uD83D\uDE00"}`, "", ""},
		{"utf8", `{"a":"héllo 日本 😀"}`, "", ""},
		{"empty containers", `{"a":{},"b":[],"c":[[],{}]}`, "", ""},
		{"depth at limit", deep(MaxDepth), "", ""},
		{"object depth at limit", deepObj(MaxDepth), "", ""},
		{"nested duplicate keys are not compared", `{"a":{"x":1,"x":2}}`, "", ""},

		{"empty", ``, "empty document", ""},
		{"only spaces", `   `, "empty document", ""},
		{"depth over limit", deep(MaxDepth + 1), "nesting deeper than 256 levels", ""},
		{"object depth over limit", deepObj(MaxDepth + 1), "nesting deeper than 256 levels", ""},
		{"six million brackets", strings.Repeat("[", 6_000_000), "nesting deeper than 256 levels", ""},
		{"duplicate key", `{"model":"a","model":"b"}`, `duplicate key "model"`, "model"},
		{"duplicate key escaped", `{"model":"a","mod\u0065l":"b"}`, `duplicate key "model"`, "model"},
		{"duplicate key among many", `{"a":1,"b":2,"c":3,"d":4,"a":5}`, `duplicate key "a"`, "a"},
		{"invalid utf8 in string", "{\"a\":\"\xff\"}", "invalid UTF-8 in a string", ""},
		{"invalid utf8 outside string", "{\"a\":1\xff}", "invalid character (byte 255)", ""},
		{"truncated utf8", "{\"a\":\"\xe6\x97\"}", "invalid UTF-8 in a string", ""},
		{"control char", "{\"a\":\"x\ny\"}", `control character '\n' in a string`, ""},
		{"bad escape", `{"a":"\x"}`, `invalid escape "\\x" in a string`, ""},
		{"bad unicode escape", `{"a":"\u12g4"}`, `invalid \u escape in a string`, ""},
		{"trailing comma", `{"a":1,}`, `invalid character '}': want a string key`, ""},
		{"trailing comma array", `[1,]`, `invalid character ']'`, ""},
		{"missing colon", `{"a" 1}`, `invalid character '1': want ':' after a key`, ""},
		{"unquoted key", `{a:1}`, `invalid character 'a': want a string key`, ""},
		{"unclosed object", `{"a":1`, "unexpected end of the document", ""},
		{"unclosed string", `{"a":"x`, "unexpected end of the document in a string", ""},
		{"mismatched close", `{"a":[1}`, `invalid character '}'`, ""},
		{"two values", `{} {}`, "unexpected data after the JSON value", ""},
		{"leading zero", `[01]`, `invalid character '1'`, ""},
		{"bare minus", `[-]`, `invalid character '-'`, ""},
		{"dot without digits", `[1.]`, "invalid number: want a digit after '.'", ""},
		{"exponent without digits", `[1e+]`, "invalid number: want a digit in the exponent", ""},
		{"bad literal", `[tru]`, `invalid character 't'`, ""},
		{"single quotes", `{'a':1}`, `invalid character '\'': want a string key`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check([]byte(tt.doc))
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("Check: got %v, want nil", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Check: got %v, want *Error with reason %q", err, tt.reason)
			}
			if e.Reason != tt.reason || e.Key != tt.key {
				t.Errorf("got reason %q key %q, want %q key %q", e.Reason, e.Key, tt.reason, tt.key)
			}
			if e.Offset < 0 || e.Offset > len(tt.doc) {
				t.Errorf("offset %d outside the document (%d bytes)", e.Offset, len(tt.doc))
			}
		})
	}
}

func TestTooManyTopLevelKeys(t *testing.T) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := 0; i <= MaxTopLevelKeys; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + `_` + itoa(i) + `":1`)
	}
	b.WriteByte('}')
	err := Check(b.Bytes())
	var e *Error
	if !errors.As(err, &e) || e.Reason != "more than 1024 top-level keys" {
		t.Fatalf("got %v, want more than 1024 top-level keys", err)
	}
	// Many distinct keys below the limit (the map path) are fine; one
	// repeat among them is found.
	many := []byte(`{`)
	for i := 0; i < 100; i++ {
		many = append(many, `"k`+itoa(i)+`":1,`...)
	}
	if err := Check(append(append([]byte{}, many...), `"z":2}`...)); err != nil {
		t.Fatalf("100 distinct keys: got %v, want nil", err)
	}
	err = Check(append(many, `"k42":2}`...))
	if !errors.As(err, &e) || e.Key != "k42" {
		t.Fatalf("repeat among 101 keys: got %v, want duplicate k42", err)
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// depthOf is the nesting depth of a document encoding/json accepts.
func depthOf(doc []byte) int {
	d, maxd := 0, 0
	inStr, esc := false, false
	for _, c := range doc {
		switch {
		case inStr && esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case !inStr && (c == '{' || c == '['):
			d++
			maxd = max(maxd, d)
		case !inStr && (c == '}' || c == ']'):
			d--
		}
	}
	return maxd
}

// topLevelDuplicate reports whether doc is an object with a repeated key,
// by encoding/json's reading.
func topLevelDuplicate(doc []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(doc))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return false
		}
		ks := k.(string)
		if seen[ks] {
			return true
		}
		seen[ks] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return false
		}
	}
	return false
}

// FuzzCheck compares Check with encoding/json: on valid UTF-8 within the
// depth limit they agree on validity, and Check refuses exactly the
// objects with a repeated top-level key.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"a","mod\u0065l":"b"}`, `[1,2,{"a":[true,false,null]}]`, `-0.5e10`, `"\ud83d\ude00"`,
		`{"a":1,}`, `[01]`, "{\"a\":\"\xff\"}", `{"a" 1}`, `[[[[[[[[[[`, `]`, ``, `{} {}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		err := Check(doc)
		keysOnly := false // Check refused the keys, not the syntax
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not *Error", err)
			}
			if e.Offset < 0 || e.Offset > len(doc) {
				t.Fatalf("offset %d outside the %d-byte document", e.Offset, len(doc))
			}
			keysOnly = e.Problem == DuplicateKey || e.Problem == TooManyKeys
		}
		if Valid(doc) != (err == nil || keysOnly) {
			t.Fatalf("Valid and Check disagree on %q: %v", doc, err)
		}
		if !utf8.Valid(doc) || depthOf(doc) > MaxDepth {
			if err == nil && !utf8.Valid(doc) {
				t.Fatalf("accepted invalid UTF-8 %q", doc)
			}
			return
		}
		valid := json.Valid(doc)
		dup := valid && topLevelDuplicate(doc)
		if (err == nil) != (valid && !dup) {
			t.Fatalf("Check(%q) = %v; encoding/json valid=%v duplicate=%v", doc, err, valid, dup)
		}
	})
}

var benchBody = []byte(`{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"max_tokens":256,` +
	`"messages":[{"role":"system","content":"You are a helpful assistant. Answer briefly and precisely."},` +
	`{"role":"user","content":"` + strings.Repeat("Tell me about the weather in Paris. ", 40) + `"}],` +
	`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`)

func BenchmarkCheck(b *testing.B) {
	b.SetBytes(int64(len(benchBody)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Check(benchBody); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGjsonValid(b *testing.B) {
	b.SetBytes(int64(len(benchBody)))
	b.ReportAllocs()
	for b.Loop() {
		if !gjson.ValidBytes(benchBody) {
			b.Fatal("invalid")
		}
	}
}
