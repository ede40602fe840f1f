package messages

import (
	"reflect"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/jsonscan"
)

// FuzzDecode: whatever a client sends, Decode and DecodeCount never
// panic; for a body the proxy's check passes they return what the gjson
// reading returned (the same Request, or the same refusal), and the
// estimate read in their walk is gjson's.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
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
	} {
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
			want, we := gjsonDecode(body, count)
			if (e == nil) != (we == nil) || e != nil && !reflect.DeepEqual(e, we) {
				t.Fatalf("%s (count %v): Decode refused %v, gjson %v", body, count, e, we)
			}
			if e != nil {
				continue
			}
			if !reflect.DeepEqual(got.Request, want) {
				t.Fatalf("%s (count %v): Decode read %+v, gjson %+v", body, count, got.Request, want)
			}
			if est := gjsonEstimate(body); got.InputTokens != est || EstimateInputTokens(body) != est {
				t.Fatalf("%s: estimate %d, gjson's %d", body, got.InputTokens, est)
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
