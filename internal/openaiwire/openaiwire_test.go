package openaiwire

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func TestContentUnmarshal(t *testing.T) {
	tests := []struct {
		name      string
		in        string // the message's content value; "" means absent
		want      Content
		wantErr   error  // errors.Is target for Err
		typeErr   bool   // Err is a *json.UnmarshalTypeError on wantField
		wantField string // relative to the part
	}{
		{name: "absent", in: "", want: Content{}},
		{name: "null", in: `null`, want: Content{}},
		{name: "string", in: `"hi \"x\""`, want: Content{Text: `hi "x"`, Set: true}},
		{name: "empty string", in: `""`, want: Content{Set: true}},
		{name: "empty array", in: `[]`, want: Content{Parts: []Part{}, IsParts: true, Set: true}},
		{
			name: "parts",
			in: `[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"low"}},
				{"type":"input_audio","input_audio":{"data":"AA==","format":"wav"}},{"type":"file","file":{"file_data":"data:a/b;base64,AA=="}},
				{"type":"refusal","refusal":"no"}]`,
			want: Content{IsParts: true, Set: true, Parts: []Part{
				{Type: "text", Text: "a"},
				{Type: "image_url", ImageURL: &ImageURL{URL: "https://x/y.png"}},
				{Type: "input_audio", InputAudio: &InputAudio{Data: "AA==", Format: "wav"}},
				{Type: "file", File: &File{FileData: "data:a/b;base64,AA=="}},
				{Type: "refusal", Refusal: "no"},
			}},
		},
		{name: "number", in: `42`, wantErr: errContentType},
		{name: "bool", in: `true`, wantErr: errContentType},
		{name: "object", in: `{"type":"text"}`, wantErr: errContentType},
		{name: "part of the wrong type", in: `[5]`, typeErr: true},
		{name: "part field of the wrong type", in: `[{"type":"text","text":5}]`, typeErr: true, wantField: "text"},
		{name: "nested part field of the wrong type", in: `[{"type":"image_url","image_url":{"url":5}}]`, typeErr: true, wantField: "image_url.url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"messages":[{"role":"user"`
			if tt.in != "" {
				body += `,"content":` + tt.in
			}
			body += `,"name":"after"}],"n":2}`
			var cr ChatRequest
			if err := json.Unmarshal([]byte(body), &cr); err != nil {
				t.Fatalf("Unmarshal: got error %v, want none (content errors stay in Content.Err)", err)
			}
			if len(cr.Messages) != 1 || cr.Messages[0].Name != "after" || cr.N == nil || *cr.N != 2 {
				t.Fatalf("got %+v, want decoding to go on past the content", cr)
			}
			got := cr.Messages[0].Content
			switch {
			case tt.wantErr != nil:
				if !errors.Is(got.Err, tt.wantErr) {
					t.Errorf("got Err %v, want %v", got.Err, tt.wantErr)
				}
			case tt.typeErr:
				var te *json.UnmarshalTypeError
				if !errors.As(got.Err, &te) || te.Field != tt.wantField {
					t.Errorf("got Err %v, want a *json.UnmarshalTypeError on field %q", got.Err, tt.wantField)
				}
			default:
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("got %+v, want %+v", got, tt.want)
				}
			}
		})
	}
}

// TestContentReuse checks that decoding into a used Content forgets the
// earlier value, as encoding/json does for a key sent twice.
func TestContentReuse(t *testing.T) {
	var c Content
	for _, in := range []string{`42`, `[{"type":"text","text":"a"}]`, `"b"`} {
		if err := json.Unmarshal([]byte(in), &c); err != nil {
			t.Fatalf("Unmarshal(%s): %v", in, err)
		}
	}
	if want := (Content{Text: "b", Set: true}); !reflect.DeepEqual(c, want) {
		t.Errorf("got %+v, want %+v", c, want)
	}
}

func TestChatRequestDecode(t *testing.T) {
	body := `{"model":"gpt-4o","messages":[
		{"role":"system","content":"Be brief."},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"ok"},
		{"role":"function","name":"g","content":"x"}],
		"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"},"strict":true}},{"type":"custom"}],
		"tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":false,
		"temperature":0.5,"top_p":1,"max_tokens":10,"max_completion_tokens":20,"stop":["a"],"n":1,"seed":7,
		"presence_penalty":0.1,"frequency_penalty":-0.2,"user":"u",
		"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":{"type":"object"}}},
		"logprobs":true,"stream_options":{"include_usage":true}}`
	f := func(v float64) *float64 { return &v }
	i := func(v int64) *int64 { return &v }
	no := false
	want := ChatRequest{
		Messages: []Message{
			{Role: "system", Content: Content{Text: "Be brief.", Set: true}},
			{Role: "assistant", ToolCalls: []ToolCall{{ID: "c1", Type: "function", Function: FunctionCall{Name: "f", Arguments: `{"a":1}`}}}},
			{Role: "tool", ToolCallID: "c1", Content: Content{Text: "ok", Set: true}},
			{Role: "function", Name: "g", Content: Content{Text: "x", Set: true}},
		},
		Tools: []Tool{
			{Type: "function", Function: &Function{Name: "f", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)}},
			{Type: "custom"},
		},
		ToolChoice:          json.RawMessage(`{"type":"function","function":{"name":"f"}}`),
		ParallelToolCalls:   &no,
		Temperature:         f(0.5),
		TopP:                f(1),
		MaxTokens:           i(10),
		MaxCompletionTokens: i(20),
		Stop:                json.RawMessage(`["a"]`),
		N:                   i(1),
		Seed:                i(7),
		PresencePenalty:     f(0.1),
		FrequencyPenalty:    f(-0.2),
		User:                "u",
		ResponseFormat:      &ResponseFormat{Type: "json_schema", JSONSchema: &JSONSchema{Schema: json.RawMessage(`{"type":"object"}`)}},
	}
	var got ChatRequest
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// TestChatRequestTypeErrors checks that a declared field of the wrong type
// is an encoding/json type error naming the field by its JSON path.
func TestChatRequestTypeErrors(t *testing.T) {
	for body, field := range map[string]string{
		`{"messages":"hi"}`:                              "messages",
		`{"messages":[{"role":5}]}`:                      "messages.role",
		`{"max_tokens":"many"}`:                          "max_tokens",
		`{"seed":"x"}`:                                   "seed",
		`{"user":5}`:                                     "user",
		`{"tools":[{"function":{"name":5}}]}`:            "tools.function.name",
		`{"response_format":{"json_schema":[]}}`:         "response_format.json_schema",
		`{"messages":[{"tool_calls":[{"function":5}]}]}`: "messages.tool_calls.function",
	} {
		var cr ChatRequest
		err := json.Unmarshal([]byte(body), &cr)
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) || te.Field != field {
			t.Errorf("Unmarshal(%s): got %v, want a type error on %q", body, err, field)
		}
	}
}

// BenchmarkDecode measures decoding a typical translated chat request.
func BenchmarkDecode(b *testing.B) {
	body := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are a helpful assistant."},
		{"role":"user","content":[{"type":"text","text":"What is in this image?"},{"type":"image_url","image_url":{"url":"https://example.com/cat.jpg"}}]},
		{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":"12C"}],
		"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],
		"temperature":0.7,"max_tokens":256,"stream":true}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		var cr ChatRequest
		if err := json.Unmarshal(body, &cr); err != nil {
			b.Fatal(err)
		}
	}
}
