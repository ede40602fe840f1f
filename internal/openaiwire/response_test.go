package openaiwire

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

func ptr(s string) *string { return &s }

var null = json.RawMessage("null")

// TestAppend checks each answer type's wire form: key names, keys left
// out, nulls, and no HTML escaping.
func TestAppend(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{
			name: "chat completion with tool calls and usage details",
			v: &ChatCompletion{ID: "chatcmpl-1", Object: ObjectChatCompletion, Created: 1767225600, Model: "m",
				Choices: []ChatChoice{{Message: ResponseMessage{Role: "assistant",
					ToolCalls: []ToolCall{{ID: "call_1", Type: "function", Function: FunctionCall{Name: "f", Arguments: `{"a":"<b>"}`}}}},
					Logprobs: null, FinishReason: FinishToolCalls}},
				Usage: &Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5,
					PromptTokensDetails: &PromptTokensDetails{CachedTokens: 1}, CompletionTokensDetails: &CompletionTokensDetails{ReasoningTokens: 1}}},
			want: `{"id":"chatcmpl-1","object":"chat.completion","created":1767225600,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,` +
				`"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":\"<b>\"}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],` +
				`"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5,"prompt_tokens_details":{"cached_tokens":1},"completion_tokens_details":{"reasoning_tokens":1}}}`,
		},
		{
			name: "chat completion text without logprobs or usage",
			v: &ChatCompletion{ID: "c", Object: ObjectChatCompletion, Model: "m",
				Choices: []ChatChoice{{Index: 1, Message: ResponseMessage{Role: "assistant", Content: ptr("a & b\n")}, FinishReason: FinishStop}}},
			want: `{"id":"c","object":"chat.completion","created":0,"model":"m","choices":[{"index":1,"message":{"role":"assistant","content":"a & b\n"},"finish_reason":"stop"}]}`,
		},
		{
			name: "first chunk",
			v: &ChatCompletionChunk{ID: "c", Object: ObjectChatCompletionChunk, Created: 1, Model: "m",
				Choices: []ChunkChoice{{Delta: Delta{Role: "assistant", Content: ptr("")}, Logprobs: null}}},
			want: `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
		},
		{
			name: "tool call chunks",
			v: &ChatCompletionChunk{ID: "c", Object: ObjectChatCompletionChunk, Created: 1, Model: "m",
				Choices: []ChunkChoice{{Delta: Delta{ToolCalls: []ToolCallDelta{
					{Index: 0, ID: "t1", Type: "function", Function: FunctionDelta{Name: "f"}},
					{Index: 1, Function: FunctionDelta{Arguments: `{"x":`}},
				}}}}},
			want: `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[` +
				`{"index":0,"id":"t1","type":"function","function":{"name":"f","arguments":""}},{"index":1,"function":{"arguments":"{\"x\":"}}]},"finish_reason":null}]}`,
		},
		{
			name: "finish chunk",
			v: &ChatCompletionChunk{ID: "c", Object: ObjectChatCompletionChunk, Created: 1, Model: "m",
				Choices: []ChunkChoice{{Index: 2, FinishReason: Finish("length")}}},
			want: `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":2,"delta":{},"finish_reason":"length"}]}`,
		},
		{
			name: "usage chunk",
			v: &ChatCompletionChunk{ID: "c", Object: ObjectChatCompletionChunk, Created: 1, Model: "m",
				Choices: []ChunkChoice{}, Usage: &Usage{PromptTokens: 1, TotalTokens: 1}},
			want: `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1}}`,
		},
		{
			name: "completion",
			v: &Completion{ID: "cmpl-1", Object: ObjectTextCompletion, Created: 1, Model: "m",
				Choices: []CompletionChoice{{Text: "hi", FinishReason: Finish(FinishStop)}}, Usage: &Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2}},
			want: `{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"text":"hi","index":0,"finish_reason":"stop"}],` +
				`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`,
		},
		{
			name: "completion stream event",
			v: &Completion{ID: "cmpl-1", Object: ObjectTextCompletion, Created: 1, Model: "m",
				Choices: []CompletionChoice{{Text: "hi ", Logprobs: null}}},
			want: `{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"text":"hi ","index":0,"logprobs":null,"finish_reason":null}]}`,
		},
		{
			name: "embeddings, floats and base64",
			v: &EmbeddingList{Object: ObjectList, Model: "e", Usage: EmbeddingUsage{PromptTokens: 4, TotalTokens: 4}, Data: []Embedding{
				{Object: ObjectEmbedding, Embedding: Vector{Values: []float64{0.5, -0.0078125, 1e-7}}},
				{Object: ObjectEmbedding, Index: 1, Embedding: Vector{Values: []float64{1, -2}, Base64: true}},
				{Object: ObjectEmbedding, Index: 2},
			}},
			want: `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,-0.0078125,1e-7]},` +
				`{"object":"embedding","index":1,"embedding":"AACAPwAAAMA="},{"object":"embedding","index":2,"embedding":[]}],` +
				`"model":"e","usage":{"prompt_tokens":4,"total_tokens":4}}`,
		},
		{
			name: "models",
			v:    &ModelList{Object: ObjectList, Data: []Model{{ID: "gpt-4o", Object: ObjectModel, Created: 5, OwnedBy: "llmrouter"}}},
			want: `{"object":"list","data":[{"id":"gpt-4o","object":"model","created":5,"owned_by":"llmrouter"}]}`,
		},
		{
			name: "error with nulls",
			v:    &ErrorBody{Error: Error{Message: `no "<model>"`, Type: "invalid_request_error"}},
			want: `{"error":{"message":"no \"<model>\"","type":"invalid_request_error","param":null,"code":null}}`,
		},
		{
			name: "error with param and code",
			v:    &ErrorBody{Error: Error{Message: "m", Type: "invalid_request_error", Param: "model", Code: "model_not_found"}},
			want: `{"error":{"message":"m","type":"invalid_request_error","param":"model","code":"model_not_found"}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Append([]byte("x"), tt.v)
			if err != nil {
				t.Fatalf("Append: %v", err)
			}
			if want := "x" + tt.want; string(got) != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// TestEncoderReuse checks that one Encoder serves many values into
// reused buffers and leaves dst as it was when a value does not encode.
func TestEncoderReuse(t *testing.T) {
	var e Encoder
	var buf []byte
	for _, s := range []string{"a", "bb", ""} {
		var err error
		buf, err = e.Append(buf[:0], &Model{ID: s})
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"id":"` + s + `","object":"","created":0,"owned_by":""}`; string(buf) != want {
			t.Errorf("got %s, want %s", buf, want)
		}
	}
	got, err := e.Append([]byte("keep"), &Vector{Values: []float64{math.Inf(1)}})
	if err == nil || string(got) != "keep" {
		t.Errorf("got %q, %v; want dst unchanged and an error", got, err)
	}
}

func TestAppendError(t *testing.T) {
	got := AppendError([]byte("data: "), Error{Message: "upstream cut", Type: "server_error", Code: "stream_error"})
	if want := `data: {"error":{"message":"upstream cut","type":"server_error","param":null,"code":"stream_error"}}`; string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	var back ErrorBody
	if err := json.Unmarshal(got[len("data: "):], &back); err != nil {
		t.Fatal(err)
	}
	if want := (Error{Message: "upstream cut", Type: "server_error", Code: "stream_error"}); back.Error != want {
		t.Errorf("decoded %+v, want %+v", back.Error, want)
	}
}

func TestVectorRoundTrip(t *testing.T) {
	for _, v := range []Vector{
		{Values: []float64{0.25, -1.5, 3}},
		{Values: []float64{0.25, -1.5, 3}, Base64: true},
		{Values: []float64{}},
	} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var back Vector
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("Unmarshal(%s): %v", b, err)
		}
		if !reflect.DeepEqual(back, v) {
			t.Errorf("%s decodes to %+v, want %+v", b, back, v)
		}
	}
	var v Vector
	if err := json.Unmarshal([]byte(`"AAAA"`), &v); err == nil {
		t.Errorf("3 bytes decoded to %+v, want an error", v)
	}
}

func TestFinish(t *testing.T) {
	if Finish("") != nil {
		t.Error(`Finish("") is not nil`)
	}
	for _, r := range []string{FinishStop, FinishLength, FinishToolCalls, FinishContentFilter, "function_call"} {
		if p := Finish(r); p == nil || *p != r {
			t.Errorf("Finish(%q) = %v", r, p)
		}
	}
	if testing.AllocsPerRun(10, func() { _ = Finish(FinishToolCalls) }) != 0 {
		t.Error("Finish of a known reason allocates")
	}
}

// BenchmarkEncodeChunk measures one text chunk through a reused Encoder,
// the per-event cost of a translated stream.
func BenchmarkEncodeChunk(b *testing.B) {
	text := "word12 "
	c := ChatCompletionChunk{ID: "msg_01XFDUDYJgAACzvnptvVoYEL", Object: ObjectChatCompletionChunk, Created: 1767225600,
		Model: "claude-haiku-4-5-20251001", Choices: []ChunkChoice{{Delta: Delta{Content: &text}, Logprobs: null}}}
	var e Encoder
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = e.Append(buf[:0], &c); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAppendAllocs checks that Append of a pointer allocates nothing of
// its own once its pool is warm: the passthrough adapters call it per
// request.
func TestAppendAllocs(t *testing.T) {
	model := "gpt-4o-mini"
	buf := make([]byte, 0, 64)
	n := testing.AllocsPerRun(100, func() { buf, _ = Append(buf[:0], &model) })
	if string(buf) != `"gpt-4o-mini"` {
		t.Errorf("got %s", buf)
	}
	if raceEnabled {
		t.Skip("the race detector empties sync.Pool at random")
	}
	if n != 0 {
		t.Errorf("Append allocated %v times per call, want 0", n)
	}
}
