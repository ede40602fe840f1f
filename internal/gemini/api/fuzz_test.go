package api

import (
	"encoding/json"
	"testing"

	"github.com/llmrouter/llmrouter/internal/intake"
)

// FuzzDecode: whatever a client sends, the decoder answers (a 400 or a
// request) without panicking, and a request it accepts translates into
// valid JSON, stream or not.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
		`{"systemInstruction":{"parts":[{"text":"s"}]},"contents":[{"role":"model","parts":[{"functionCall":{"name":"a","args":{"x":[1,{"y":null}]}}}]},{"parts":[{"functionResponse":{"name":"a","response":{}}},{"inlineData":{"mimeType":"image/png","data":"AA"}}]}],"tools":[{"functionDeclarations":[{"name":"a","parameters":{"type":"OBJECT","nullable":true,"properties":{"p":{"type":"ARRAY","items":{"type":"STRING"}}}}}]}],"generationConfig":{"maxOutputTokens":5,"responseMimeType":"application/json","responseSchema":{"type":"OBJECT"}}}`,
		`{"contents":[{"parts":[{"text":1}]}]}`,
		`{"contents":[[[[]]]]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if intake.Check(body) != nil {
			return
		}
		d, aerr := decode(body, false)
		if aerr != nil {
			if aerr.Status != 400 {
				t.Fatalf("status %d", aerr.Status)
			}
			return
		}
		for _, stream := range []bool{false, true} {
			tr := translate(d, "m", stream)
			if !json.Valid(tr.body) {
				t.Fatalf("translation of %s is not JSON: %s", body, tr.body)
			}
		}
		_ = identity(nil, d)
	})
}
