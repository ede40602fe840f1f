package messages

import (
	"reflect"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/jsonscan"
)

// decodeSeeds are FuzzDecode's seeds, and inputs of decode.golden.
var decodeSeeds = []string{
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m\u00e9","max_tokens":1.0,"system":[{"type":"text","text":"s"}],"stream":true,"temperature":0.5,"top_p":null,"top_k":3,"stop_sequences":["x"],"metadata":{"user_id":"u"},"thinking":{"type":"enabled"},
	  "tools":[{"name":"f","description":"d","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"w"}],"tool_choice":{"type":"tool","name":"f","disable_parallel_tool_use":true},
	  "messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA"}},{"type":"document","source":{"type":"text","data":"doc"}}]},
	  {"content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"tool_use","id":"a","name":"f","input":{"k":[1]}}],"role":"assistant"},
	  {"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"ok"},{"type":"image","source":{"type":"url","url":"u"}}],"is_error":false}]}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"content":[{"type":7}],"role":"bad"}]}`,
	`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi","content":[]}],"system":7}`,
	`{"model":"","max_tokens":0,"messages":[]}`,
	`{"model":"m","max_tokens":1e999,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":{}}]}]}`,
	`[]`, `{"model":"m"`, ``,
}

// FuzzDecode: whatever a client sends, Decode and DecodeCount never
// panic and refuse every body the bounded check refuses; for a body it
// passes, the checked walk reads what the unchecked walk reads, and the
// texts it keeps are JSON from the body. What they read is
// decode.golden's (TestDecodeGolden), which replaced the gjson oracle.
func FuzzDecode(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, count := range []bool{false, true} {
			got, e := decode(body, count, true)
			if e != nil && (e.Status != 400 || e.Type != "invalid_request_error" || e.Message == "") {
				t.Fatalf("refusal %+v", e)
			}
			lax, le := decode(body, count, false)
			if jsonscan.Check(body) != nil {
				if e == nil {
					t.Fatalf("%q (count %v): the checked walk took a body Check refuses", body, count)
				}
				continue
			}
			// On a body Check accepts, the checked walk reads what the
			// walk alone reads.
			if !reflect.DeepEqual(e, le) || !reflect.DeepEqual(got, lax) {
				t.Fatalf("%s (count %v): checked walk %+v, %v; unchecked %+v, %v", body, count, got, e, lax, le)
			}
			if e != nil {
				continue
			}
			if EstimateInputTokens(body) != max(1, got.InputTokens) {
				t.Fatalf("%s: EstimateInputTokens %d, the walk's %d", body, EstimateInputTokens(body), got.InputTokens)
			}
			for _, p := range []struct {
				name string
				text []byte
			}{{"tools", got.Tools}, {"tool_choice", got.ToolChoice}, {"temperature", got.Temperature}, {"top_p", got.TopP}, {"stop_sequences", got.StopSequences}} {
				if p.text != nil && (!jsonscan.Valid(p.text) || !strings.Contains(string(body), string(p.text))) {
					t.Fatalf("%s holds %q", p.name, p.text)
				}
			}
		}
	})
}
