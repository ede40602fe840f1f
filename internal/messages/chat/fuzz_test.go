package chat

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
	"github.com/llmrouter/llmrouter/internal/messages"
	"github.com/llmrouter/llmrouter/internal/outcome"
)

// decodeTranslateSeeds are FuzzDecodeTranslate's seeds (inputs of translate.golden too).
func decodeTranslateSeeds() []string {
	return []string{
		claudeCodeBody(),
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m\u0000\"","max_tokens":1,"system":"s","stream":true,"temperature":0.5,"top_p":1e-3,"stop_sequences":["x"],"messages":[{"role":"user","content":[{"type":"text","text":"a"},
	  {"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA\n"}},{"type":"image","source":{"type":"url","url":"https://x"}},{"type":"newer","text":"t"}]}]}`,
		`{"model":"m","max_tokens":5,"tools":[{"name":"f","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"w"}],"tool_choice":{"type":"tool","name":"f","disable_parallel_tool_use":true},
	  "messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"tool_use","id":"a","name":"f","input":{"k":[1,{"x":null}]}}]},
	  {"role":"user","content":[{"type":"text","text":"r"},{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"ok"}],"is_error":true}]}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi","content":7}],"system":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"\ud800 \u2028"}]`,
	}
}

// FuzzDecodeTranslate: whatever a client sends, Decode, DecodeCount and
// EstimateInputTokens do not panic, and a request Decode passes
// translates into a chat request that is valid JSON with a model string
// at the offsets the adapters swap: the client's model, for a body that
// meets Decode's precondition (the proxy's check). What it writes is
// translate.golden's (TestTranslateGolden), which replaced the gjson
// oracle.
func FuzzDecodeTranslate(f *testing.F) {
	for _, s := range decodeTranslateSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, _ = messages.DecodeCount(body)
		if n := messages.EstimateInputTokens(body); n < 1 {
			t.Fatalf("estimate %d", n)
		}
		req, e := messages.Decode(body)
		if e != nil {
			if e.Status != 400 || e.Type != "invalid_request_error" || e.Message == "" {
				t.Fatalf("refusal %+v", e)
			}
			return
		}
		tr, e := Translate(body, req)
		if e != nil {
			t.Fatalf("Translate refused a request Decode passed: %v", e)
		}
		if !json.Valid(tr.Body) {
			t.Fatalf("chat request is not JSON: %s", tr.Body)
		}
		var model string
		if err := json.Unmarshal(tr.Body[tr.ModelStart:tr.ModelEnd], &model); err != nil {
			t.Fatalf("offsets hold %q: %v", tr.Body[tr.ModelStart:tr.ModelEnd], err)
		}
		if jsoncheck.Check(body) == nil && model != req.Model {
			t.Fatalf("offsets hold %q, want the model %q", model, req.Model)
		}
	})
}

// FuzzAnswerEvents: whatever a provider answers or streams, the message
// is valid JSON (or an error), and the events are well framed, each one
// line of JSON, ending in message_stop or one error event. What they
// write is answer.golden's and events.golden's (TestAnswerGolden,
// TestEventsGolden), which replaced the gjson oracle.
func FuzzAnswerEvents(f *testing.F) {
	f.Add([]byte(`{"id":"x","choices":[{"index":0,"message":{"content":"hi","tool_calls":[{"id":"a b","function":{"name":"f","arguments":"{\"k\":1}"}}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":3}}`),
		[]byte(chunk(`{"content":"hi\n"}`, "")), []byte(chunk(call(0, "c.1", "f", `"{\"a\""`), "tool_calls")), false)
	f.Add([]byte(`{"choices":[]}`), []byte(`{"choices":[{"delta":{"tool_calls":[{"id":"x","function":{"arguments":{"k":"\u2028"}}}]}}]}`), []byte(usageChunk), true)
	tr := translate(f, `{"model":"claude-x","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	f.Add([]byte(`{}`), []byte(`{"choices":[{"delta":{"content":"a"},"index":0,"delta":{"tool_calls":null}}],"choices":{"x":{"d\u0065lta":{"content":"\\"}}}}`),
		[]byte(`{"choices":[{"index":"0","delta":{"tool_calls":[{"index":1,"index":0,"function":{"name":"f","name":"g","arguments":{"a":[]}}}]},"finish_reason":"length"}]}`), false)
	f.Fuzz(func(t *testing.T, answer, a, b []byte, fail bool) {
		for _, c := range [][]byte{a, b} {
			if !json.Valid(c) {
				_, _ = tr.Events().Chunk(nil, c) // not a payload a stream gives, but no panic either
			}
		}
		if msg, err := tr.Answer(answer); err == nil && !json.Valid(msg) {
			t.Fatalf("message is not JSON: %s", msg)
		}
		ev := tr.Events()
		var out []byte
		for _, c := range [][]byte{a, b} {
			if !json.Valid(c) {
				continue // adapters relay valid JSON only (provider.Stream)
			}
			var err error
			if out, err = ev.Chunk(out, c); err != nil {
				fail = true
				break
			}
		}
		if fail {
			out = ev.Fail(out, outcome.Network)
		} else {
			out = ev.End(out)
		}
		evs := parseEvents(t, out)
		for _, e := range evs {
			if !json.Valid([]byte(e.data.Raw)) {
				t.Fatalf("%s is not JSON: %s", e.name, e.data.Raw)
			}
		}
		last := evs[len(evs)-1].name
		if fail && last != "error" || !fail && last != "message_stop" {
			t.Fatalf("stream ends with %s (fail %v)", last, fail)
		}
		if !fail && (evs[0].name != "message_start" || gjson.Get(evs[len(evs)-2].data.Raw, "type").Str != "message_delta") {
			t.Fatalf("events %s", render(evs))
		}
	})
}

// translateFormSeeds are FuzzTranslateForm's seeds (inputs of translate.golden too).
func translateFormSeeds() []string {
	return []string{
		claudeCodeBody(), conversationBody(),
		`{"model":"m","max_tokens":5,"stream":true,"system":null,"tools":null,"tool_choice":null,"temperature":null,"top_p":0.5,"stop_sequences":null,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":5,"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"},"stop_sequences":["a"],"temperature":1,
	  "messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"tool_result","tool_use_id":"x","content":[{"type":"text","text":"r"}]}]}]}`,
	}
}

// FuzzTranslateForm: the translation of the form Decode's walk read
// (TranslateForm, what the front door sends) is Translate's, which reads
// the body again, byte for byte, for any body Decode passes.
func FuzzTranslateForm(f *testing.F) {
	for _, s := range translateFormSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		form, e := messages.DecodeForm(body)
		if e != nil {
			return
		}
		got, e := TranslateForm(body, form)
		if e != nil {
			t.Fatalf("TranslateForm refused a request Decode passed: %v", e)
		}
		if jsoncheck.Check(body) != nil {
			return // Translate reads a body as it finds it; the form, as the check passed it
		}
		want, _ := Translate(body, form.Request)
		if !bytes.Equal(got.Body, want.Body) || got.ModelStart != want.ModelStart || got.ModelEnd != want.ModelEnd ||
			got.Stream != want.Stream || got.model != want.model || got.estimate != want.estimate {
			t.Fatalf("%s: TranslateForm wrote\n%s (estimate %d)\nTranslate wrote\n%s (estimate %d)", body, got.Body, got.estimate, want.Body, want.estimate)
		}
	})
}
