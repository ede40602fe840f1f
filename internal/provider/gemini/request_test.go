package gemini

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

const okAnswer = `{"candidates":[{"content":{"parts":[{"text":"ok"}],"role":"model"},"finishReason":"STOP","index":0}],
 "usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1,"totalTokenCount":4},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`

// TestTranslateChat sends OpenAI requests through Do and compares the JSON
// the fake Gemini received.
func TestTranslateChat(t *testing.T) {
	tests := []struct {
		name  string
		model string // "" means gemini-2.5-flash
		in    string
		want  string
	}{
		{
			name: "system, sampling and limits",
			in: `{"model":"gpt-4o","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}],
				"temperature":0,"top_p":0.9,"max_tokens":100,"stop":"END","n":2,"seed":7,
				"presence_penalty":0.5,"frequency_penalty":0.25,"response_format":{"type":"json_object"},"user":"u1","logprobs":false}`,
			want: `{"systemInstruction":{"parts":[{"text":"Be brief."}]},
				"contents":[{"role":"user","parts":[{"text":"Hi"}]}],
				"generationConfig":{"temperature":0,"topP":0.9,"maxOutputTokens":100,"stopSequences":["END"],"candidateCount":2,
					"seed":7,"presencePenalty":0.5,"frequencyPenalty":0.25,"responseMimeType":"application/json"}}`,
		},
		{
			name: "max_completion_tokens wins, stop array, developer role, json_schema",
			in: `{"messages":[{"role":"developer","content":[{"type":"text","text":"Rule 1."},{"type":"text","text":"Rule 2."}]},
				{"role":"system","content":"Rule 3."},{"role":"user","content":"Go"}],
				"max_tokens":10,"max_completion_tokens":20,"stop":["a","b"],
				"response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,
					"schema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}}}}`,
			want: `{"systemInstruction":{"parts":[{"text":"Rule 1."},{"text":"Rule 2."},{"text":"Rule 3."}]},
				"contents":[{"role":"user","parts":[{"text":"Go"}]}],
				"generationConfig":{"maxOutputTokens":20,"stopSequences":["a","b"],"responseMimeType":"application/json",
					"responseJsonSchema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}}}`,
		},
		{
			name: "multimodal user parts and a multi-turn history",
			in: `{"messages":[{"role":"user","content":[{"type":"text","text":"What is in these?"},
				{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},
				{"type":"image_url","image_url":{"url":"https://example.com/cat.webp?size=large","detail":"high"}},
				{"type":"image_url","image_url":{"url":"https://example.com/photo"}},
				{"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}},
				{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERi0=","filename":"a.pdf"}}]},
				{"role":"assistant","content":"A cat."},{"role":"user","content":"Sure?"}]}`,
			want: `{"contents":[{"role":"user","parts":[{"text":"What is in these?"},
				{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}},
				{"fileData":{"mimeType":"image/webp","fileUri":"https://example.com/cat.webp?size=large"}},
				{"fileData":{"mimeType":"image/jpeg","fileUri":"https://example.com/photo"}},
				{"inlineData":{"mimeType":"audio/wav","data":"UklGRg=="}},
				{"inlineData":{"mimeType":"application/pdf","data":"JVBERi0="}}]},
				{"role":"model","parts":[{"text":"A cat."}]},{"role":"user","parts":[{"text":"Sure?"}]}]}`,
		},
		{
			name:  "tools, tool calls and merged tool results",
			model: "gemini-3-flash-preview",
			in: `{"messages":[{"role":"user","content":"Weather in Oslo and time in Rome?"},
				{"role":"assistant","content":null,"tool_calls":[
					{"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Oslo\"}"}},
					{"id":"call_b","type":"function","function":{"name":"get_time","arguments":""}}]},
				{"role":"tool","tool_call_id":"call_a","content":"{\"temp\": 21, \"sky\": \"clear\"}"},
				{"role":"tool","tool_call_id":"call_b","content":[{"type":"text","text":"14:05"}]},
				{"role":"assistant","content":"Oslo is 21C; Rome is 14:05."},
				{"role":"user","content":"Thanks"}],
				"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather by city",
					"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false},"strict":true}},
					{"type":"function","function":{"name":"get_time"}}],
				"tool_choice":"auto","parallel_tool_calls":true}`,
			want: `{"contents":[{"role":"user","parts":[{"text":"Weather in Oslo and time in Rome?"}]},
				{"role":"model","parts":[
					{"functionCall":{"name":"get_weather","args":{"city":"Oslo"}},"thoughtSignature":"skip_thought_signature_validator"},
					{"functionCall":{"name":"get_time","args":{}}}]},
				{"role":"user","parts":[
					{"functionResponse":{"name":"get_weather","response":{"content":{"temp":21,"sky":"clear"}}}},
					{"functionResponse":{"name":"get_time","response":{"content":{"result":"14:05"}}}}]},
				{"role":"model","parts":[{"text":"Oslo is 21C; Rome is 14:05."}]},
				{"role":"user","parts":[{"text":"Thanks"}]}],
				"tools":[{"functionDeclarations":[
					{"name":"get_weather","description":"Weather by city",
					 "parametersJsonSchema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}},
					{"name":"get_time"}]}],
				"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}}}`,
		},
		{
			name: "assistant text with a tool call, legacy function result",
			in: `{"messages":[{"role":"user","content":"x"},
				{"role":"assistant","content":"Checking.","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
				{"role":"tool","tool_call_id":"c1","content":"[1,2]"},
				{"role":"function","name":"g","content":"plain"}],
				"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"required"}`,
			want: `{"contents":[{"role":"user","parts":[{"text":"x"}]},
				{"role":"model","parts":[{"text":"Checking."},{"functionCall":{"name":"f","args":{}}}]},
				{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"content":{"result":"[1,2]"}}}},
					{"functionResponse":{"name":"g","response":{"content":{"result":"plain"}}}}]}],
				"tools":[{"functionDeclarations":[{"name":"f","parametersJsonSchema":{"type":"object"}}]}],
				"toolConfig":{"functionCallingConfig":{"mode":"ANY"}}}`,
		},
		{
			name: "tool_choice none",
			in:   `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none"}`,
			want: `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"f"}]}],
				"toolConfig":{"functionCallingConfig":{"mode":"NONE"}}}`,
		},
		{
			name: "tool_choice names a function",
			in: `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],
				"tool_choice":{"type":"function","function":{"name":"f"}}}`,
			want: `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"f"}]}],
				"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["f"]}}}`,
		},
		{
			name: "empty contents are dropped, unicode kept",
			in:   `{"messages":[{"role":"user","content":""},{"role":"user","content":"¿Qué tal? 🚀 \"q\" <b>"},{"role":"assistant","content":[]}]}`,
			want: `{"contents":[{"role":"user","parts":[{"text":"¿Qué tal? 🚀 \"q\" <b>"}]}]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, up := newUpstream(t, Config{}, reply(http.StatusOK, okAnswer))
			req := chatReq(tt.in)
			if tt.model != "" {
				req.Model = tt.model
			}
			if _, err := a.Do(context.Background(), req); err != nil {
				t.Fatalf("Do: %v", err)
			}
			got := up.Only(t)
			if want := "/v1beta/models/" + req.Model + ":generateContent"; got.Method != http.MethodPost || got.Path != want || got.Query != "" {
				t.Errorf("got %s %s?%s, want POST %s", got.Method, got.Path, got.Query, want)
			}
			if k := got.Header.Get("X-Goog-Api-Key"); k != "test-key" {
				t.Errorf("got x-goog-api-key %q, want %q", k, "test-key")
			}
			if ct := got.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("got content-type %q, want application/json", ct)
			}
			providertest.SameJSON(t, "gemini request", got.Body, tt.want)
		})
	}
}

// TestTranslateChatRejects checks that untranslatable requests are client
// errors that never reach the network.
func TestTranslateChatRejects(t *testing.T) {
	user := `{"role":"user","content":"x"}`
	tests := []struct {
		name string
		op   provider.Op
		in   string
	}{
		{"malformed JSON", provider.OpChat, `{"messages":[`},
		{"messages not an array", provider.OpChat, `{"messages":"hi"}`},
		{"no messages", provider.OpChat, `{"messages":[]}`},
		{"only system", provider.OpChat, `{"messages":[{"role":"system","content":"s"}]}`},
		{"unknown role", provider.OpChat, `{"messages":[{"role":"critic","content":"x"}]}`},
		{"content a number", provider.OpChat, `{"messages":[{"role":"user","content":42}]}`},
		{"unknown part type", provider.OpChat, `{"messages":[{"role":"user","content":[{"type":"video","video":{}}]}]}`},
		{"image in a system message", provider.OpChat, `{"messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x/a.png"}}]},` + user + `]}`},
		{"ftp image", provider.OpChat, `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x/a.png"}}]}]}`},
		{"data URL not base64", provider.OpChat, `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,abc"}}]}]}`},
		{"audio without format", provider.OpChat, `{"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AA=="}}]}]}`},
		{"file by id", provider.OpChat, `{"messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-1"}}]}]}`},
		{"tool result for an unknown call", provider.OpChat, `{"messages":[` + user + `,{"role":"tool","tool_call_id":"nope","content":"x"}]}`},
		{"tool arguments not an object", provider.OpChat, `{"messages":[` + user + `,{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`},
		{"tool arguments malformed", provider.OpChat, `{"messages":[` + user + `,{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{"}}]}]}`},
		{"tool call without a name", provider.OpChat, `{"messages":[` + user + `,{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"arguments":"{}"}}]}]}`},
		{"tool result with an image", provider.OpChat, `{"messages":[` + user + `,{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":[{"type":"image_url","image_url":{"url":"https://x/a.png"}}]}]}`},
		{"function message without a name", provider.OpChat, `{"messages":[` + user + `,{"role":"function","content":"x"}]}`},
		{"custom tool", provider.OpChat, `{"messages":[` + user + `],"tools":[{"type":"custom","custom":{"name":"x"}}]}`},
		{"tool without a name", provider.OpChat, `{"messages":[` + user + `],"tools":[{"type":"function","function":{"description":"d"}}]}`},
		{"bad tool_choice string", provider.OpChat, `{"messages":[` + user + `],"tool_choice":"sometimes"}`},
		{"bad tool_choice object", provider.OpChat, `{"messages":[` + user + `],"tool_choice":{"type":"function"}}`},
		{"bad response_format", provider.OpChat, `{"messages":[` + user + `],"response_format":{"type":"xml"}}`},
		{"n zero", provider.OpChat, `{"messages":[` + user + `],"n":0}`},
		{"stop a number", provider.OpChat, `{"messages":[` + user + `],"stop":5}`},
		{"embeddings token array", provider.OpEmbeddings, `{"model":"e","input":[1,2,3]}`},
		{"embeddings token arrays", provider.OpEmbeddings, `{"model":"e","input":[[1,2],[3]]}`},
		{"embeddings number", provider.OpEmbeddings, `{"model":"e","input":5}`},
		{"embeddings no input", provider.OpEmbeddings, `{"model":"e"}`},
		{"embeddings empty list", provider.OpEmbeddings, `{"model":"e","input":[]}`},
		{"embeddings bad encoding", provider.OpEmbeddings, `{"model":"e","input":"x","encoding_format":"int8"}`},
		{"legacy completions", provider.OpCompletions, `{"model":"m","prompt":"x"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, up := newUpstream(t, Config{}, reply(http.StatusOK, okAnswer))
			_, err := a.Do(context.Background(), &provider.Request{Op: tt.op, Model: "gemini-2.5-flash", Body: []byte(tt.in)})
			if err == nil {
				t.Fatal("Do succeeded, want a client error")
			}
			oe := providertest.As[*outcome.Error](t, err)
			if oe.Kind != outcome.ClientError || oe.Status != http.StatusBadRequest {
				t.Errorf("got %s status %d, want client_error status 400 (%v)", oe.Kind, oe.Status, err)
			}
			if n := len(up.Requests()); n != 0 {
				t.Errorf("upstream got %d requests, want 0", n)
			}
		})
	}
}

// TestTranslateDoesNotModifyBody guards the retry contract: the client's
// bytes serve every attempt.
func TestTranslateDoesNotModifyBody(t *testing.T) {
	in := `{"messages":[{"role":"user","content":" x "}],"tools":[{"type":"function","function":{"name":"f","parameters":{ "type" : "object" }}}]}`
	body := []byte(in)
	if _, err := translateChat(body, "gemini-2.5-flash", 0, false); err != nil {
		t.Fatalf("translateChat: %v", err)
	}
	if string(body) != in {
		t.Errorf("body changed: got %s, want %s", body, in)
	}
}

func TestWantsThoughtSignature(t *testing.T) {
	for model, want := range map[string]bool{
		"gemini-3-pro-preview":   true,
		"gemini-3.1-flash":       true,
		"models/gemini-3-flash":  true,
		"gemini-10-ultra":        true,
		"gemini-flash-latest":    true,
		"gemini-2.5-flash":       false,
		"gemini-2.0-flash-001":   false,
		"gemini-1.5-pro":         false,
		"gemma-3-27b-it":         false,
		"learnlm-2.0-flash-exp":  false,
		"tunedModels/my-model-1": false,
	} {
		if got := wantsThoughtSignature(model); got != want {
			t.Errorf("wantsThoughtSignature(%q) = %v, want %v", model, got, want)
		}
	}
}

// TestTranslateChatContentWhenReached pins that a content of the wrong
// type is refused when its message is translated, so an earlier message's
// error wins.
func TestTranslateChatContentWhenReached(t *testing.T) {
	user := `{"role":"user","content":"x"}`
	call := `{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}`
	tests := []struct {
		name, in, wantMsg string
	}{
		{"earlier role error wins", `{"messages":[{"role":"critic","content":"x"},{"role":"user","content":42}]}`, `role "critic" is not supported`},
		{"user content a number", `{"messages":[{"role":"user","content":42}]}`, "messages[0].content must be a string or an array of parts"},
		{"part field of the wrong type", `{"messages":[` + user + `,{"role":"user","content":[{"type":"text","text":5}]}]}`, "messages[1].content must be a string or an array of parts"},
		{"tool result an object", `{"messages":[` + user + `,` + call + `,{"role":"tool","tool_call_id":"c","content":{}}]}`, "messages[2].content must be a string or an array of text parts"},
	}
	for _, tt := range tests {
		// A stream's decode runs on a goroutine of its own: the same
		// error either way.
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.name, stream), func(t *testing.T) {
				_, err := translateChat([]byte(tt.in), "gemini-2.5-flash", 0, stream)
				oe := providertest.As[*outcome.Error](t, err)
				if oe.Kind != outcome.ClientError || !strings.Contains(oe.Message, tt.wantMsg) {
					t.Errorf("got %v %q, want client_error mentioning %q", oe.Kind, oe.Message, tt.wantMsg)
				}
			})
		}
	}
}
