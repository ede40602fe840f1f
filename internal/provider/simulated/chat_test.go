package simulated

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// chatResult is a chat answer as a client sees it, whole or assembled
// from a stream the way the SDKs assemble one.
type chatResult struct {
	content  *string
	calls    []call
	finish   string
	usage    outcome.Usage // as the body or the usage chunk reported it
	adapter  outcome.Usage // Response.Usage, or Stream.Usage() at the end
	chunks   int
	rawFirst string // the first chunk of a stream
}

type call struct{ id, typ, name, args string }

// chat sends body to a and returns the answer, streamed or not.
func chat(t testing.TB, a *Adapter, body string, stream bool) chatResult {
	t.Helper()
	resp, err := a.Do(context.Background(), req(provider.OpChat, body, stream))
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if !stream {
		var c struct {
			Choices []struct {
				Message struct {
					Role      string  `json:"role"`
					Content   *string `json:"content"`
					ToolCalls []struct {
						ID       string `json:"id"`
						Type     string `json:"type"`
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Model string `json:"model"`
			Usage struct {
				PromptTokens     int64 `json:"prompt_tokens"`
				CompletionTokens int64 `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(resp.Body, &c); err != nil || len(c.Choices) != 1 {
			t.Fatalf("answer %s: %v", resp.Body, err)
		}
		m := c.Choices[0].Message
		r := chatResult{content: m.Content, finish: c.Choices[0].FinishReason, adapter: resp.Usage,
			usage: outcome.Usage{PromptTokens: c.Usage.PromptTokens, CompletionTokens: c.Usage.CompletionTokens, Model: c.Model}}
		for _, tc := range m.ToolCalls {
			r.calls = append(r.calls, call{tc.ID, tc.Type, tc.Function.Name, tc.Function.Arguments})
		}
		if m.Role != "assistant" {
			t.Errorf("role %q, want assistant", m.Role)
		}
		return r
	}
	var r chatResult
	for {
		p, err := resp.Stream.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if r.chunks == 0 {
			r.rawFirst = string(p)
		}
		r.chunks++
		var c struct {
			Choices []struct {
				Delta struct {
					Role      string  `json:"role"`
					Content   *string `json:"content"`
					ToolCalls []struct {
						Index    *int   `json:"index"`
						ID       string `json:"id"`
						Type     string `json:"type"`
						Function struct {
							Name      string  `json:"name"`
							Arguments *string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Model string `json:"model"`
			Usage *struct {
				PromptTokens     int64 `json:"prompt_tokens"`
				CompletionTokens int64 `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(p, &c); err != nil {
			t.Fatalf("chunk %s: %v", p, err)
		}
		if c.Usage != nil {
			if len(c.Choices) != 0 {
				t.Errorf("usage chunk %s has choices", p)
			}
			r.usage = outcome.Usage{PromptTokens: c.Usage.PromptTokens, CompletionTokens: c.Usage.CompletionTokens, Model: c.Model}
		}
		for _, ch := range c.Choices {
			if ch.FinishReason != nil {
				if r.finish != "" {
					t.Errorf("second finish reason in %s", p)
				}
				r.finish = *ch.FinishReason
			}
			if ch.Delta.Content != nil {
				s := *ch.Delta.Content
				if r.content != nil {
					s = *r.content + s
				}
				r.content = &s
			}
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Index == nil || tc.Function.Arguments == nil {
					t.Fatalf("tool call delta without index or arguments: %s", p)
				}
				switch {
				case *tc.Index == len(r.calls): // a new call: OpenAI sends id, type and name first, once
					if tc.ID == "" || tc.Type != "function" || tc.Function.Name == "" {
						t.Errorf("first piece of a tool call %s lacks id, type or name", p)
					}
					r.calls = append(r.calls, call{tc.ID, tc.Type, tc.Function.Name, *tc.Function.Arguments})
				case *tc.Index == len(r.calls)-1:
					if tc.ID != "" || tc.Type != "" || tc.Function.Name != "" {
						t.Errorf("later piece of a tool call %s repeats its id, type or name", p)
					}
					r.calls[*tc.Index].args += *tc.Function.Arguments
				default:
					t.Fatalf("tool call index %d out of order in %s", *tc.Index, p)
				}
			}
		}
	}
	r.adapter = resp.Stream.Usage()
	return r
}

const weatherTools = `"tools":[
 {"type":"function","function":{"name":"get_time","description":"the time in a zone","parameters":{"type":"object","properties":{"zone":{"type":"string","enum":["UTC","CET"]}},"required":["zone"],"additionalProperties":false}}},
 {"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string","minLength":2},"days":{"type":"integer","minimum":1,"maximum":7},"units":{"anyOf":[{"type":"string","enum":["c","f"]},{"type":"null"}]}},"required":["city","days","units"],"additionalProperties":false},"strict":true}},
 {"type":"function","function":{"name":"ping"}}]`

// toolTurn is a conversation that called get_weather and got its result.
const toolTurn = `{"role":"user","content":"weather?"},
 {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
 {"role":"tool","tool_call_id":"call_1","content":"{\"temp\":21}"}`

// TestChatAnswers: tool calls under each tool_choice, answers to tool
// results, structured outputs and plain text, each whole and streamed,
// with the same answer and usage both ways.
func TestChatAnswers(t *testing.T) {
	a, err := New(provider.Config{Name: "s"}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	schemaOf := func(body, name string) string {
		for _, tl := range gjson.Get(body, "tools").Array() {
			if tl.Get("function.name").Str == name {
				if p := tl.Get("function.parameters"); p.Exists() {
					return p.Raw
				}
				return `{"type":"object","properties":{},"additionalProperties":false}`
			}
		}
		return gjson.Get(body, "response_format.json_schema.schema").Raw
	}
	tests := []struct {
		name     string
		body     string
		call     string // the function called; "" for a text answer
		text     string // a substring of the text answer
		json     bool   // the text is JSON valid against response_format's schema
		wantArgs string // the exact arguments, when given
	}{
		{name: "plain text", body: `{"messages":[{"role":"user","content":"hi"}]}`, text: "Simulated answer from s (sim-1). You said: hi"},
		{name: "auto by default calls the first tool", body: `{"messages":[{"role":"user","content":"hi"}],` + weatherTools + `}`,
			call: "get_time", wantArgs: `{"zone":"UTC"}`},
		{name: "auto calls the tool the user names", body: `{"messages":[{"role":"user","content":"use get_weather for Paris"}],"tool_choice":"auto",` + weatherTools + `}`,
			call: "get_weather", wantArgs: `{"city":"city","days":1,"units":"c"}`},
		{name: "auto matches a name with spaces", body: `{"messages":[{"role":"user","content":[{"type":"text","text":"Get Weather please"}]}],` + weatherTools + `}`,
			call: "get_weather"},
		{name: "auto answers a tool result with text", body: `{"messages":[` + toolTurn + `],` + weatherTools + `}`,
			text: `The tool get_weather returned: {"temp":21}`},
		{name: "auto after an assistant turn is text", body: `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}],` + weatherTools + `}`,
			text: "You said: hi"},
		{name: "none never calls", body: `{"messages":[{"role":"user","content":"use get_weather"}],"tool_choice":"none",` + weatherTools + `}`,
			text: "You said: use get_weather"},
		{name: "required calls even after a tool result", body: `{"messages":[` + toolTurn + `],"tool_choice":"required",` + weatherTools + `}`,
			call: "get_time"},
		{name: "named function", body: `{"messages":[{"role":"user","content":"use get_time"}],"tool_choice":{"type":"function","function":{"name":"get_weather"}},` + weatherTools + `}`,
			call: "get_weather"},
		{name: "named function, Responses form", body: `{"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"function","name":"ping"},` + weatherTools + `}`,
			call: "ping", wantArgs: `{}`},
		{name: "allowed tools", body: `{"messages":[` + toolTurn + `],"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"function","function":{"name":"ping"}}]}},` + weatherTools + `}`,
			call: "ping"},
		{name: "tools of other types are not called", body: `{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"custom","custom":{"name":"grammar"}}]}`,
			text: "You said: hi"},
		{name: "legacy function result", body: `{"messages":[{"role":"user","content":"x"},{"role":"function","name":"lookup","content":"42"}]}`,
			text: "The tool lookup returned: 42"},
		{name: "tool result of an unknown call", body: `{"messages":[{"role":"tool","tool_call_id":"nope","content":[{"type":"text","text":"done"}]}]}`,
			text: "The tool returned: done"},
		{name: "json_schema", body: `{"messages":[{"role":"user","content":"a person"}],"response_format":{"type":"json_schema","json_schema":{"name":"person","strict":true,"schema":` + zodPerson + `}}}`,
			json: true},
		{name: "json_schema after a tool result", body: `{"messages":[` + toolTurn + `],"response_format":{"type":"json_schema","json_schema":{"name":"w","schema":{"type":"object","properties":{"temp":{"type":"number"}},"required":["temp"]}}},` + weatherTools + `}`,
			json: true},
		{name: "json_schema without a schema", body: `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"any"}}}`,
			json: true},
		{name: "json_object", body: `{"messages":[{"role":"user","content":"hi \"there\""}],"response_format":{"type":"json_object"}}`,
			text: `{"answer":"Simulated answer from s (sim-1). You said: hi \"there\""}`},
		{name: "response_format text", body: `{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"text"}}`, text: "You said: hi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			whole := chat(t, a, tt.body, false)
			streamed := chat(t, a, tt.body, true)
			for _, r := range []struct {
				how string
				chatResult
			}{{"whole", whole}, {"streamed", streamed}} {
				if tt.call != "" {
					if len(r.calls) != 1 || r.finish != "tool_calls" || r.content != nil && *r.content != "" {
						t.Fatalf("%s: calls %+v, finish %q, content %v; want one call of %s, finish tool_calls, no content", r.how, r.calls, r.finish, r.content, tt.call)
					}
					c := r.calls[0]
					if c.name != tt.call || c.typ != "function" || !strings.HasPrefix(c.id, "call_") {
						t.Errorf("%s: call %+v, want function %s with a call_ id", r.how, c, tt.call)
					}
					if err := schemaCheck([]byte(schemaOf(tt.body, tt.call)), []byte(c.args)); err != nil {
						t.Errorf("%s: arguments %s break the tool's schema: %v", r.how, c.args, err)
					}
					if tt.wantArgs != "" && c.args != tt.wantArgs {
						t.Errorf("%s: arguments %s, want %s", r.how, c.args, tt.wantArgs)
					}
					continue
				}
				if len(r.calls) != 0 || r.finish != "stop" || r.content == nil {
					t.Fatalf("%s: calls %+v, finish %q, content %v; want text, finish stop", r.how, r.calls, r.finish, r.content)
				}
				if tt.text != "" && !strings.Contains(*r.content, tt.text) {
					t.Errorf("%s: content %q lacks %q", r.how, *r.content, tt.text)
				}
				if tt.json {
					if err := schemaCheck([]byte(schemaOf(tt.body, "")), []byte(*r.content)); err != nil {
						t.Errorf("%s: content %s breaks the schema: %v", r.how, *r.content, err)
					}
				}
			}
			if streamed.content != nil && *streamed.content != *whole.content ||
				len(whole.calls) == 1 && (whole.calls[0].args != streamed.calls[0].args || whole.calls[0].name != streamed.calls[0].name) {
				t.Errorf("streamed answer differs from the whole one: %+v vs %+v", streamed, whole)
			}
			if whole.usage.CompletionTokens == 0 || whole.usage.PromptTokens == 0 || whole.usage != whole.adapter ||
				streamed.usage != whole.usage || streamed.adapter != whole.usage {
				t.Errorf("usage: whole body %+v, Response.Usage %+v, usage chunk %+v, Stream.Usage %+v; want equal and non-zero",
					whole.usage, whole.adapter, streamed.usage, streamed.adapter)
			}
		})
	}
}

// TestChatStreamToolCallEvents pins the event sequence of a streamed tool
// call to OpenAI's: role, id, type, name and empty arguments first, then
// argument fragments, an empty delta with finish_reason tool_calls, then
// the usage chunk.
func TestChatStreamToolCallEvents(t *testing.T) {
	a, _ := New(provider.Config{Name: "s"}, Config{})
	resp, err := a.Do(context.Background(), req(provider.OpChat,
		`{"messages":[{"role":"user","content":"x"}],"tool_choice":"required",`+weatherTools+`}`, true))
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	for {
		p, err := resp.Stream.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			Choices []json.RawMessage `json:"choices"`
			Usage   json.RawMessage   `json:"usage"`
		}
		if err := json.Unmarshal(p, &c); err != nil {
			t.Fatal(err)
		}
		switch {
		case c.Usage != nil:
			events = append(events, "usage")
		default:
			var ch struct {
				Delta        json.RawMessage `json:"delta"`
				FinishReason *string         `json:"finish_reason"`
			}
			json.Unmarshal(c.Choices[0], &ch)
			e := string(ch.Delta)
			if ch.FinishReason != nil {
				e += " " + *ch.FinishReason
			}
			events = append(events, e)
		}
	}
	id := gjson.Get(events[0], "tool_calls.0.id").Str
	want := []string{
		`{"role":"assistant","tool_calls":[{"index":0,"id":"` + id + `","type":"function","function":{"name":"get_time","arguments":""}}]}`,
		`{"tool_calls":[{"index":0,"function":{"arguments":"{\"zone\":\"UTC\"}"}}]}`,
		`{} tool_calls`,
		`usage`,
	}
	if strings.Join(events, "\n") != strings.Join(want, "\n") {
		t.Errorf("events\n%s\nwant\n%s", strings.Join(events, "\n"), strings.Join(want, "\n"))
	}
}

// TestChatStreamFragments: JSON longer than a fragment streams in several
// pieces that add up to it, each a whole number of UTF-8 characters.
func TestChatStreamFragments(t *testing.T) {
	a, _ := New(provider.Config{Name: "s"}, Config{})
	body := `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"object","properties":{"städte":{"type":"array","items":{"type":"string","enum":["Zürich","Genève","Köln"]},"minItems":3,"uniqueItems":true}},"required":["städte"]}}}}`
	r := chat(t, a, body, true)
	if want := `{"städte":["Zürich","Genève","Köln"]}`; r.content == nil || *r.content != want {
		t.Fatalf("content %v, want %s", r.content, want)
	}
	if r.chunks < 4 { // fragments, finish, usage
		t.Errorf("%d chunks: the JSON was not streamed in fragments", r.chunks)
	}
}

// TestChatToolChoiceErrors: what OpenAI refuses is a 400 client error
// naming tool_choice, before any wait.
func TestChatToolChoiceErrors(t *testing.T) {
	a, _ := New(provider.Config{Name: "s"}, Config{Latency: 1 << 40})
	for _, body := range []string{
		`{"messages":[{"role":"user","content":"x"}],"tool_choice":"sometimes",` + weatherTools + `}`,
		`{"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"function","function":{"name":"nope"}},` + weatherTools + `}`,
		`{"messages":[{"role":"user","content":"x"}],"tool_choice":"required"}`,
		`{"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[]}},` + weatherTools + `}`,
		`{"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"maybe"}},` + weatherTools + `}`,
		`{"messages":[{"role":"user","content":"x"}],"tool_choice":42,` + weatherTools + `}`,
	} {
		for _, stream := range []bool{false, true} {
			_, err := a.Do(context.Background(), req(provider.OpChat, body, stream))
			var oe *outcome.Error
			if !errors.As(err, &oe) || oe.Kind != outcome.ClientError || oe.Status != 400 || oe.Param != "tool_choice" || oe.Type != "invalid_request_error" {
				t.Errorf("%s (stream %v): got %v, want a 400 client error naming tool_choice", body, stream, err)
			}
		}
	}
}

// TestReplyOverridesText: a configured Reply is the text of every text
// answer, and tool calls and structured outputs still happen.
func TestReplyOverridesText(t *testing.T) {
	a, _ := New(provider.Config{Name: "s"}, Config{Reply: "fixed"})
	if r := chat(t, a, `{"messages":[`+toolTurn+`]}`, false); r.content == nil || *r.content != "fixed" {
		t.Errorf("after a tool result: %v, want the Reply", r.content)
	}
	if r := chat(t, a, `{"messages":[{"role":"user","content":"x"}],`+weatherTools+`}`, false); len(r.calls) != 1 {
		t.Errorf("with tools: %+v, want a tool call", r)
	}
	if r := chat(t, a, `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}}`, false); r.content == nil || *r.content != `{"answer":"fixed"}` {
		t.Errorf("json_object: %v", r.content)
	}
}
