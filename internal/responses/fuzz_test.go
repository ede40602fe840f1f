package responses

import (
	"testing"

	"github.com/llmrouter/llmrouter/internal/jsonscan"
)

// FuzzDecode: whatever a client sends, Decode never panics, refuses with
// a 400 naming what it refuses, and refuses every body the bounded check
// refuses (its walk is the check); a body the check takes is never
// refused as not JSON. What it reads is decode.golden's
// (TestDecodeGolden); the encoding/json decoder it replaced was compared
// with it by a differential fuzz of the two.
func FuzzDecode(f *testing.F) {
	for _, s := range decodeInputs() {
		f.Add([]byte(s))
	}
	for _, s := range []string{`{"model":"m","input":"hi"}{}`, `{"model":"m","input":[{"role":"user","content":[1,]}]}`,
		`{"model":"m","input":"hi","model":"n"}`, "{\"model\":\"\xff\",\"input\":\"hi\"}", ``, ` `, `{"model":"m"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		d, e := Decode(body)
		if e != nil {
			if e.Status != 400 || e.Message == "" {
				t.Fatalf("%q: refusal %+v", body, e)
			}
		} else if d == nil || d.Model == "" {
			t.Fatalf("%q: no refusal and no model", body)
		}
		if jsonscan.Check(body) != nil {
			if e == nil {
				t.Fatalf("%q: the walk took a body the check refuses", body)
			}
			return
		}
		if e == notJSON {
			t.Fatalf("%q: refused as not JSON, which the check takes", body)
		}
	})
}
