package anthropic

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

const okMessage = `{"id":"msg_01","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001",
"content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,
"usage":{"input_tokens":3,"output_tokens":1}}`

func TestTranslate(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{
			name: "system and developer joined, sampling fields, unknown fields ignored",
			in: `{"model":"gpt-4o-mini","messages":[
				{"role":"system","content":"Be brief."},
				{"role":"developer","content":[{"type":"text","text":"Answer in French."}]},
				{"role":"user","content":"Hi"}],
				"max_tokens":100,"temperature":1.5,"top_p":0.9,"stop":"END","user":"u-42","n":1,
				"seed":7,"logprobs":true,"presence_penalty":0.5,"response_format":{"type":"text"},
				"stream_options":{"include_usage":true}}`,
			want: `{"model":"claude-haiku-4-5","max_tokens":100,"system":"Be brief.\nAnswer in French.",
				"messages":[{"role":"user","content":"Hi"}],
				"temperature":1,"top_p":0.9,"stop_sequences":["END"],"metadata":{"user_id":"u-42"}}`,
		},
		{
			name: "max_completion_tokens wins over max_tokens, temperature below 1 kept, stop array",
			in: `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":100,"max_completion_tokens":50,
				"temperature":0.2,"stop":["a","b"]}`,
			want: `{"model":"claude-haiku-4-5","max_tokens":50,"messages":[{"role":"user","content":"Hi"}],
				"temperature":0.2,"stop_sequences":["a","b"]}`,
		},
		{
			name: "default max_tokens, null fields treated as absent",
			in:   `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":null,"stop":null,"n":null,"tool_choice":null}`,
			want: `{"model":"claude-haiku-4-5","max_tokens":4096,"messages":[{"role":"user","content":"Hi"}]}`,
		},
		{
			name: "tools with required choice and no parallel calls",
			in: `{"messages":[{"role":"user","content":"Weather in Oslo?"}],
				"tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather",
					"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":true}},
					{"type":"function","function":{"name":"now"}}],
				"tool_choice":"required","parallel_tool_calls":false}`,
			want: `{"model":"claude-haiku-4-5","max_tokens":4096,"messages":[{"role":"user","content":"Weather in Oslo?"}],
				"tools":[{"name":"get_weather","description":"Current weather",
					"input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},
					{"name":"now","input_schema":{"type":"object","properties":{}}}],
				"tool_choice":{"type":"any","disable_parallel_tool_use":true}}`,
		},
		{
			name: "named tool choice",
			in: `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],
				"tool_choice":{"type":"function","function":{"name":"f"}}}`,
			want: `{"model":"claude-haiku-4-5","max_tokens":4096,"messages":[{"role":"user","content":"x"}],
				"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"f"}}`,
		},
		{
			name: "none choice ignores parallel_tool_calls",
			in: `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],
				"tool_choice":"none","parallel_tool_calls":false}`,
			want: `{"model":"claude-haiku-4-5","max_tokens":4096,"messages":[{"role":"user","content":"x"}],
				"tools":[{"name":"f","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"none"}}`,
		},
		{
			name: "auto choice explicit and implied by parallel_tool_calls false",
			in: `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],
				"parallel_tool_calls":false}`,
			want: `{"model":"claude-haiku-4-5","max_tokens":4096,"messages":[{"role":"user","content":"x"}],
				"tools":[{"name":"f","input_schema":{"type":"object","properties":{}}}],
				"tool_choice":{"type":"auto","disable_parallel_tool_use":true}}`,
		},
		{
			name: "tool choice without tools is dropped",
			in:   `{"messages":[{"role":"user","content":"x"}],"tool_choice":"auto"}`,
			want: `{"model":"claude-haiku-4-5","max_tokens":4096,"messages":[{"role":"user","content":"x"}]}`,
		},
		{
			name: "tool call round trip: null content, merged tool results, system in between",
			in: `{"messages":[
				{"role":"user","content":"Weather in Oslo and Bergen?"},
				{"role":"assistant","content":null,"tool_calls":[
					{"id":"toolu_01","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},
					{"id":"toolu_02","type":"function","function":{"name":"get_weather","arguments":" {\"city\": \"Bergen\"} "}}]},
				{"role":"tool","tool_call_id":"toolu_01","content":"12C"},
				{"role":"system","content":"Use Celsius."},
				{"role":"tool","tool_call_id":"toolu_02","content":[{"type":"text","text":"9C"}]},
				{"role":"user","content":"Thanks"},
				{"role":"assistant","content":"Checking.","tool_calls":[{"id":"toolu_03","type":"function","function":{"name":"now","arguments":""}}]},
				{"role":"tool","tool_call_id":"toolu_03","content":"noon"}]}`,
			want: `{"model":"claude-haiku-4-5","max_tokens":4096,"system":"Use Celsius.","messages":[
				{"role":"user","content":"Weather in Oslo and Bergen?"},
				{"role":"assistant","content":[
					{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"city":"Oslo"}},
					{"type":"tool_use","id":"toolu_02","name":"get_weather","input":{"city":"Bergen"}}]},
				{"role":"user","content":[
					{"type":"tool_result","tool_use_id":"toolu_01","content":"12C"},
					{"type":"tool_result","tool_use_id":"toolu_02","content":[{"type":"text","text":"9C"}]}]},
				{"role":"user","content":"Thanks"},
				{"role":"assistant","content":[{"type":"text","text":"Checking."},
					{"type":"tool_use","id":"toolu_03","name":"now","input":{}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_03","content":"noon"}]}]}`,
		},
		{
			name: "content parts: text, data URL and https images",
			in: `{"messages":[{"role":"user","content":[
				{"type":"text","text":"What is in these?"},
				{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo=","detail":"low"}},
				{"type":"image_url","image_url":{"url":"https://example.com/cat.jpg"}}]},
				{"role":"assistant","content":[{"type":"text","text":"A cat."}]}]}`,
			want: `{"model":"claude-haiku-4-5","max_tokens":4096,"messages":[{"role":"user","content":[
				{"type":"text","text":"What is in these?"},
				{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},
				{"type":"image","source":{"type":"url","url":"https://example.com/cat.jpg"}}]},
				{"role":"assistant","content":[{"type":"text","text":"A cat."}]}]}`,
		},
		{
			name: "escaping survives",
			in:   `{"messages":[{"role":"user","content":"quote \" backslash \\ newline \n tab \t é 世界 \u2028"}]}`,
			want: `{"model":"claude-haiku-4-5","max_tokens":4096,"messages":[{"role":"user","content":"quote \" backslash \\ newline \n tab \t é 世界 \u2028"}]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []byte
			var hdr http.Header
			a, _ := newTestAdapter(t, func(w http.ResponseWriter, r *http.Request) {
				got, _ = io.ReadAll(r.Body)
				hdr = r.Header.Clone()
				if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
					t.Errorf("got %s %s, want POST /v1/messages", r.Method, r.URL.Path)
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, okMessage)
			})
			if _, err := a.Do(context.Background(), chatReq(tt.in)); err != nil {
				t.Fatalf("Do: %v", err)
			}
			providertest.SameJSON(t, "upstream body", got, tt.want)
			for k, want := range map[string]string{
				"X-Api-Key": "sk-ant-test", "Anthropic-Version": "2023-06-01", "Content-Type": "application/json",
			} {
				if v := hdr.Get(k); v != want {
					t.Errorf("header %s = %q, want %q", k, v, want)
				}
			}
			if v := hdr.Get("Authorization"); v != "" {
				t.Errorf("Authorization = %q, want none", v)
			}
		})
	}
}

func TestTranslateRejects(t *testing.T) {
	tests := []struct {
		name, in, wantMsg, wantParam string
	}{
		{"not JSON", `{"messages":`, "invalid", ""},
		{"messages missing", `{"model":"x"}`, "messages is required", "messages"},
		{"messages empty", `{"messages":[]}`, "messages is required", "messages"},
		{"messages wrong type", `{"messages":"hi"}`, "messages", "messages"},
		{"content wrong type", `{"messages":[{"role":"user","content":42}]}`, "content must be", ""},
		{"n above 1", `{"messages":[{"role":"user","content":"x"}],"n":2}`, "n must be 1", "n"},
		{"max_tokens wrong type", `{"messages":[{"role":"user","content":"x"}],"max_tokens":"many"}`, "max_tokens", "max_tokens"},
		{"role missing", `{"messages":[{"content":"x"}]}`, "role is required", "messages"},
		{"role unknown", `{"messages":[{"role":"function","content":"x"}]}`, `unsupported role "function"`, "messages"},
		{"only system", `{"messages":[{"role":"system","content":"x"}]}`, "only system", "messages"},
		{"arguments not JSON", `{"messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{city:"}}]}]}`,
			"tool_calls[0].function.arguments", "messages"},
		{"arguments not an object", `{"messages":[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`,
			"must be a JSON object", "messages"},
		{"audio part", `{"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]}`, `unsupported content part type "input_audio"`, "messages"},
		{"image in assistant", `{"messages":[{"role":"assistant","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`,
			`unsupported content part type "image_url"`, "messages"},
		{"image in system", `{"messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]},{"role":"user","content":"x"}]}`,
			"text parts only", "messages"},
		{"image ftp", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x/y.png"}}]}]}`, "https or data", "messages"},
		{"image data not base64", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,abc"}}]}]}`, "base64", "messages"},
		{"image url missing", `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, "image_url.url", "messages"},
		{"tool type", `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"retrieval"}]}`, `unsupported type "retrieval"`, "tools"},
		{"tool name missing", `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{}}]}`, "name is required", "tools"},
		{"tool parameters array", `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":[]}}]}`,
			"parameters", "tools"},
		{"tool choice unknown", `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"sometimes"}`,
			`unsupported value "sometimes"`, "tool_choice"},
		{"tool choice object without name", `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function"}}`,
			"tool_choice", "tool_choice"},
		{"stop wrong type", `{"messages":[{"role":"user","content":"x"}],"stop":5}`, "stop must be", ""},
	}
	var hits atomic.Int32
	a, _ := newTestAdapter(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.WriteString(w, okMessage)
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := a.Do(context.Background(), chatReq(tt.in))
			if err == nil {
				t.Fatal("got no error, want a client error")
			}
			oe := providertest.As[*outcome.Error](t, err)
			if oe.Kind != outcome.ClientError || oe.Status != http.StatusBadRequest {
				t.Errorf("got kind %v status %d, want client_error 400", oe.Kind, oe.Status)
			}
			if !strings.Contains(oe.Message, tt.wantMsg) {
				t.Errorf("got message %q, want it to mention %q", oe.Message, tt.wantMsg)
			}
			if oe.Param != tt.wantParam {
				t.Errorf("got param %q, want %q", oe.Param, tt.wantParam)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("upstream got %d requests, want 0", n)
	}
}

// TestTranslateRejectsFirst pins which error a body with several wins: a
// content or stop of the wrong type beats any other type error, and of
// the two the one earlier in the body.
func TestTranslateRejectsFirst(t *testing.T) {
	tests := []struct {
		name, in, wantMsg, wantParam string
	}{
		{"content before a later type error", `{"messages":[{"role":"user","content":42}],"max_tokens":"many"}`,
			"message content must be", ""},
		{"content after an earlier type error", `{"max_tokens":"many","messages":[{"role":5,"content":[{"type":"text","text":5}]}]}`,
			"messages.content.text: wrong type (got number)", "messages.content.text"},
		{"first content in message order", `{"messages":[{"role":"user","content":[7]},{"role":"user","content":42}]}`,
			"messages.content: wrong type (got number)", "messages.content"},
		{"stop before content", `{"stop":5,"messages":[{"role":"user","content":42}]}`, "stop must be", ""},
		{"content before stop", `{"messages":[{"role":"user","content":42}],"stop":5}`, "message content must be", ""},
		{"stop element before a type error", `{"max_tokens":"many","stop":["a",1],"messages":[{"role":"user","content":"x"}]}`,
			"stop: wrong type (got number)", "stop"},
		{"type error only", `{"messages":[{"role":"user","content":"x"}],"max_tokens":"many"}`, "max_tokens: wrong type", "max_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := translate(nil, chatReq(tt.in), 4096)
			oe := providertest.As[*outcome.Error](t, err)
			if oe.Kind != outcome.ClientError || !strings.Contains(oe.Message, tt.wantMsg) || oe.Param != tt.wantParam {
				t.Errorf("got %v %q param %q, want client_error mentioning %q param %q", oe.Kind, oe.Message, oe.Param, tt.wantMsg, tt.wantParam)
			}
		})
	}
}
