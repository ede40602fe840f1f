package chat

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/responses"
	"github.com/llmrouter/llmrouter/internal/responses/store"
	"github.com/llmrouter/llmrouter/internal/responses/turn"
)

// TestChatTranslation: requests (and the conversation a chain holds) →
// the chat completions request a provider gets.
func TestChatTranslation(t *testing.T) {
	tests := []struct {
		name, body string
		want       string
	}{
		{"string input with instructions",
			`{"model":"m","input":"hi","instructions":"be brief"}`,
			`{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`},
		{"parameters",
			`{"model":"m","input":"hi","max_output_tokens":64,"temperature":0,"top_p":0.5,"user":"u1","reasoning":{"effort":"low","summary":"auto"},
			  "text":{"format":{"type":"json_schema","name":"answer","schema":{"type":"object"},"strict":true},"verbosity":"low"},
			  "parallel_tool_calls":false,"metadata":{"k":"v"},"stream":true,"store":false}`,
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"parallel_tool_calls":false,"temperature":0,"top_p":0.5,
			  "max_completion_tokens":64,"response_format":{"type":"json_schema","json_schema":{"name":"answer","schema":{"type":"object"},"strict":true}},
			  "reasoning_effort":"low","verbosity":"low","user":"u1","stream":true,"stream_options":{"include_usage":true}}`},
		{"json object",
			`{"model":"m","input":"hi","text":{"format":{"type":"json_object"}}}`,
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}}`},
		{"plain text format is no response_format",
			`{"model":"m","input":"hi","text":{"format":{"type":"text"}}}`,
			`{"model":"m","messages":[{"role":"user","content":"hi"}]}`},
		{"tools and a forced function",
			`{"model":"m","input":"hi","tools":[{"type":"function","name":"get_weather","description":"d","parameters":{"type":"object"},"strict":true},
			  {"type":"function","name":"noop","parameters":null,"strict":null}],"tool_choice":{"type":"function","name":"get_weather"}}`,
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[
			  {"type":"function","function":{"name":"get_weather","description":"d","parameters":{"type":"object"},"strict":true}},
			  {"type":"function","function":{"name":"noop"}}],"tool_choice":{"type":"function","function":{"name":"get_weather"}}}`},
		{"allowed tools filter the list",
			`{"model":"m","input":"hi","tools":[{"type":"function","name":"a"},{"type":"function","name":"b"}],
			  "tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"b"}]}}`,
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"b"}}],"tool_choice":"required"}`},
		{"parts: text, image, file",
			`{"model":"m","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"what is this?"},
			  {"type":"input_image","image_url":"https://x/cat.png","detail":"high"},{"type":"input_image","image_url":"data:image/png;base64,AAAA"},
			  {"type":"input_file","file_data":"data:application/pdf;base64,BBBB","filename":"a.pdf"}]}]}`,
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},
			  {"type":"image_url","image_url":{"url":"https://x/cat.png","detail":"high"}},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},
			  {"type":"file","file":{"file_data":"data:application/pdf;base64,BBBB","filename":"a.pdf"}}]}]}`},
		{"a single text part is a string",
			`{"model":"m","input":[{"role":"developer","content":[{"type":"input_text","text":"rules"}]},{"role":"user","content":"hi"}]}`,
			`{"model":"m","messages":[{"role":"developer","content":"rules"},{"role":"user","content":"hi"}]}`},
		{"assistant text and its calls are one turn; outputs follow it in call order",
			`{"model":"m","input":[{"role":"user","content":"weather in Paris and Rome?"},
			  {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking."}]},
			  {"type":"function_call","call_id":"call_1","name":"w","arguments":"{\"city\":\"Paris\"}"},
			  {"type":"function_call","call_id":"call_2","name":"w","arguments":"{\"city\":\"Rome\"}"},
			  {"role":"user","content":"hurry"},
			  {"type":"function_call_output","call_id":"call_2","output":"20C"},
			  {"type":"function_call_output","call_id":"call_1","output":[{"type":"input_text","text":"18C"}]}]}`,
			`{"model":"m","messages":[{"role":"user","content":"weather in Paris and Rome?"},
			  {"role":"assistant","content":"Checking.","tool_calls":[
			    {"id":"call_1","type":"function","function":{"name":"w","arguments":"{\"city\":\"Paris\"}"}},
			    {"id":"call_2","type":"function","function":{"name":"w","arguments":"{\"city\":\"Rome\"}"}}]},
			  {"role":"tool","content":"18C","tool_call_id":"call_1"},{"role":"tool","content":"20C","tool_call_id":"call_2"},
			  {"role":"user","content":"hurry"}]}`},
		{"a call alone is an assistant tn without content",
			`{"model":"m","input":[{"role":"user","content":"hi"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},
			  {"type":"function_call_output","call_id":"c","output":"ok"}]}`,
			`{"model":"m","messages":[{"role":"user","content":"hi"},
			  {"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},
			  {"role":"tool","content":"ok","tool_call_id":"c"}]}`},
		{"reasoning items, and references to them the router does not hold, are left out",
			`{"model":"m","input":[{"role":"user","content":"hi"},
			  {"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"t"}],"encrypted_content":"gAAA","status":"completed"},
			  {"type":"item_reference","id":"rs_gone"},
			  {"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"hello","annotations":[]}]}],
			  "include":["reasoning.encrypted_content"],"store":false}`,
			`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`},
		{"call ids reused across turns pair in order",
			`{"model":"m","input":[{"role":"user","content":"a"},{"type":"function_call","call_id":"call_0","name":"f","arguments":"{}"},
			  {"type":"function_call_output","call_id":"call_0","output":"1"},{"role":"user","content":"b"},
			  {"type":"function_call","call_id":"call_0","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"call_0","output":"2"}]}`,
			`{"model":"m","messages":[{"role":"user","content":"a"},
			  {"role":"assistant","content":null,"tool_calls":[{"id":"call_0","type":"function","function":{"name":"f","arguments":"{}"}}]},
			  {"role":"tool","content":"1","tool_call_id":"call_0"},{"role":"user","content":"b"},
			  {"role":"assistant","content":null,"tool_calls":[{"id":"call_0","type":"function","function":{"name":"f","arguments":"{}"}}]},
			  {"role":"tool","content":"2","tool_call_id":"call_0"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := translate(t, store.NewMemory(store.Config{}, nil), tt.body)
			sameJSON(t, tr.Body, tt.want)
			if got := string(tr.Body[tr.ModelStart:tr.ModelEnd]); got != `"m"` {
				t.Errorf("model offsets delimit %q, want %q", got, `"m"`)
			}
		})
	}
}

func TestChatTranslationRefusesUnpairedCalls(t *testing.T) {
	tests := []struct{ name, input, wantMsg string }{
		{"call without output", `[{"role":"user","content":"hi"},{"type":"function_call","call_id":"call_9","name":"f","arguments":"{}"}]`, "No tool output found for function call call_9."},
		{"output without call", `[{"role":"user","content":"hi"},{"type":"function_call_output","call_id":"call_8","output":"x"}]`, "No tool call found for function call output with call_id call_8."},
		{"output before its call", `[{"type":"function_call_output","call_id":"c","output":"x"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]`, "No tool call found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, e := responses.Decode([]byte(`{"model":"m","input":` + tt.input + `}`))
			if e != nil {
				t.Fatal(e)
			}
			tn, e := turn.New(context.Background(), d, store.NewMemory(store.Config{}, nil), nil)
			if e != nil {
				t.Fatal(e)
			}
			_, e = Translate(tn)
			if e == nil || e.Status != 400 || e.Param != "input" || !strings.Contains(e.Message, tt.wantMsg) {
				t.Fatalf("got %+v, want 400 param input %q", e, tt.wantMsg)
			}
		})
	}
}

// TestChain: previous_response_id expands into every earlier turn's
// input and output, oldest first, without the earlier instructions;
// item_reference resolves from the store; unknown ids are OpenAI's 400s.
func TestChain(t *testing.T) {
	clock := time.Unix(1767225600, 0)
	now := func() time.Time { return clock }
	s := store.NewMemory(store.Config{}, now)
	next := func(body string) *Translation {
		t.Helper()
		return translate(t, s, body)
	}
	first := next(`{"model":"m","instructions":"first rules","input":"what is the weather?","tools":[{"type":"function","name":"w"}]}`)
	if _, err := first.Answer([]byte(`{"model":"up","choices":[{"message":{"role":"assistant","content":null,
		"tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"w","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}]}`)); err != nil {
		t.Fatal(err)
	}
	second := next(`{"model":"m","instructions":"second rules","previous_response_id":"` + first.t.ID() + `",
		"input":[{"type":"function_call_output","call_id":"toolu_1","output":"18C"}]}`)
	sameJSON(t, second.Body, `{"model":"m","messages":[{"role":"system","content":"second rules"},{"role":"user","content":"what is the weather?"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"w","arguments":"{\"city\":\"Paris\"}"}}]},
		{"role":"tool","content":"18C","tool_call_id":"toolu_1"}]}`)
	out, err := second.Answer([]byte(`{"model":"up","choices":[{"message":{"role":"assistant","content":"18C in Paris."},"finish_reason":"stop"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	msgID := gjsonString(t, out, "output.0.id")

	// A third turn refers to the second's answer by id (the Vercel AI
	// SDK's way) instead of continuing it.
	third := next(`{"model":"m","input":[{"role":"user","content":"again?"},{"type":"item_reference","id":"` + msgID + `"},{"role":"user","content":"thanks"}]}`)
	sameJSON(t, third.Body, `{"model":"m","messages":[{"role":"user","content":"again?"},{"role":"assistant","content":"18C in Paris."},{"role":"user","content":"thanks"}]}`)

	for _, tt := range []struct{ name, body, param, code string }{
		{"unknown previous id", `{"model":"m","previous_response_id":"resp_nope","input":"x"}`, "previous_response_id", "previous_response_not_found"},
		{"unknown item reference", `{"model":"m","input":[{"type":"item_reference","id":"msg_nope"}]}`, "input", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, e := responses.Decode([]byte(tt.body))
			if e != nil {
				t.Fatal(e)
			}
			if _, e = turn.New(context.Background(), d, s, now); e == nil || e.Status != 400 || e.Param != tt.param || e.Code != tt.code {
				t.Fatalf("got %+v; want 400 param %q code %q", e, tt.param, tt.code)
			}
		})
	}

	// store: false keeps nothing.
	unstored := translate(t, s, `{"model":"m","input":"hi","store":false}`)
	if _, err := unstored.Answer([]byte(`{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}]}`)); err != nil {
		t.Fatal(err)
	}
	if stored(t, s, unstored.t.ID()) != nil {
		t.Error("a store: false response was stored")
	}
}

// sameJSON fails t unless got and want are the same JSON value.
func sameJSON(t testing.TB, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got is not JSON: %v: %s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want is not JSON: %v: %s", err, want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
