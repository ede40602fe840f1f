package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/intake"
	"github.com/llmrouter/llmrouter/internal/outcome"
)

// mustTranslate decodes body and translates it for model.
func mustTranslate(t *testing.T, body string, stream bool) (*translation, gjson.Result) {
	t.Helper()
	if aerr := intake.Check([]byte(body)); aerr != nil {
		t.Fatalf("intake.Check: %v", aerr.Message)
	}
	d, aerr := decode([]byte(body), false)
	if aerr != nil {
		t.Fatalf("decode: %s", aerr.Message)
	}
	tr := translate(d, "gemini-2.5-flash", stream)
	if !json.Valid(tr.body) {
		t.Fatalf("translation is not JSON: %s", tr.body)
	}
	if got := string(tr.body[tr.modelStart:tr.modelEnd]); got != `"gemini-2.5-flash"` {
		t.Errorf("model at [%d,%d) is %s", tr.modelStart, tr.modelEnd, got)
	}
	return tr, gjson.ParseBytes(tr.body)
}

// TestTranslate checks each field of a Gemini request as chat
// completions gets it.
func TestTranslate(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want map[string]string // gjson path: raw JSON value ("" absent)
	}{
		{name: "text turns and system",
			body: `{"systemInstruction":{"parts":[{"text":"be brief"},{"text":"be kind"}]},"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"thinking","thought":true},{"text":"hello"}]},{"parts":[{"text":"again"}]}]}`,
			want: map[string]string{"messages.0": `{"role":"system","content":"be brief\nbe kind"}`, "messages.1": `{"role":"user","content":"hi"}`,
				"messages.2": `{"role":"assistant","content":"hello"}`, "messages.3": `{"role":"user","content":"again"}`, "stream": ""}},
		{name: "tool loop: calls by id and by name",
			body: `{"contents":[{"role":"user","parts":[{"text":"go"}]},{"role":"model","parts":[{"functionCall":{"id":"c1","name":"read","args":{"p":"a"}},"thoughtSignature":"sig"},{"functionCall":{"name":"ls","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"ls","response":{"out":"x"}}},{"functionResponse":{"id":"c1","name":"read","response":{"out":"y"}}}]}]}`,
			want: map[string]string{
				"messages.1": `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{\"p\":\"a\"}"}},{"id":"call_1_1","type":"function","function":{"name":"ls","arguments":"{}"}}]}`,
				"messages.2": `{"role":"tool","tool_call_id":"call_1_1","content":"{\"out\":\"x\"}"}`,
				"messages.3": `{"role":"tool","tool_call_id":"c1","content":"{\"out\":\"y\"}"}`,
				"messages.4": ""}},
		{name: "a response to no call is text",
			body: `{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"ls","response":{"out":"x"}}}]}]}`,
			want: map[string]string{"messages.0": `{"role":"user","content":"function ls returned {\"out\":\"x\"}"}`}},
		{name: "images and files",
			body: `{"contents":[{"role":"user","parts":[{"text":"what is this"},{"inlineData":{"mimeType":"image/png","data":"AAAA"}},{"fileData":{"mimeType":"audio/mp3","fileUri":"gs://x"}}]}]}`,
			want: map[string]string{"messages.0.content.1": `{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}`,
				"messages.0.content.2.type": `"text"`}},
		{name: "tools: parameters upper case, parametersJsonSchema, built-ins dropped, ANY with one name",
			body: `{"contents":[{"parts":[{"text":"x"}]}],"tools":[{"googleSearch":{}},{"functionDeclarations":[{"name":"a","description":"d","parameters":{"type":"OBJECT","properties":{"n":{"type":"INTEGER","nullable":true}},"propertyOrdering":["n"]}},{"name":"b","parametersJsonSchema":{"type":"object","properties":{"type":{"type":"string"}}}},{"name":"c"}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["b"]}}}`,
			want: map[string]string{
				"tools.0":     `{"type":"function","function":{"name":"a","description":"d","parameters":{"type":"object","properties":{"n":{"type":["integer","null"]}}}}}`,
				"tools.1":     `{"type":"function","function":{"name":"b","parameters":{"type":"object","properties":{"type":{"type":"string"}}}}}`,
				"tools.2":     `{"type":"function","function":{"name":"c","parameters":{"type":"object","properties":{}}}}`,
				"tool_choice": `{"type":"function","function":{"name":"b"}}`}},
		{name: "generationConfig; what chat cannot carry dropped",
			body: `{"contents":[{"parts":[{"text":"x"}]}],"safetySettings":[{"category":"HARM_CATEGORY_HATE_SPEECH","threshold":"BLOCK_NONE"}],"cachedContent":"cachedContents/1","generationConfig":{"maxOutputTokens":100,"temperature":0.5,"topP":0.9,"topK":40,"stopSequences":["END"],"seed":7,"thinkingConfig":{"thinkingBudget":0},"responseMimeType":"application/json","responseJsonSchema":{"type":"OBJECT","properties":{"s":{"type":"STRING"}}}}}`,
			want: map[string]string{"max_tokens": "100", "temperature": "0.5", "top_p": "0.9", "stop": `["END"]`, "seed": "7",
				"response_format": `{"type":"json_schema","json_schema":{"name":"response","schema":{"type":"object","properties":{"s":{"type":"string"}}}}}`,
				"safetySettings":  "", "cachedContent": "", "top_k": "", "thinkingConfig": ""}},
		{name: "JSON without a schema",
			body: `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"responseMimeType":"application/json"}}`,
			want: map[string]string{"response_format": `{"type":"json_object"}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, doc := mustTranslate(t, tc.body, false)
			for path, want := range tc.want {
				if got := doc.Get(path).Raw; got != want {
					t.Errorf("%s = %s, want %s", path, got, want)
				}
			}
		})
	}
}

func TestTranslateStream(t *testing.T) {
	_, doc := mustTranslate(t, `{"contents":[{"parts":[{"text":"x"}]}]}`, true)
	if doc.Get("stream").Raw != "true" || doc.Get("stream_options.include_usage").Raw != "true" {
		t.Errorf("stream request %s, want stream with its usage", doc.Raw)
	}
}

// TestAnswer checks a chat completion as a GenerateContentResponse.
func TestAnswer(t *testing.T) {
	tr := &translation{model: "gemini-2.5-flash"}
	got, err := tr.answer([]byte(`{"id":"chatcmpl-1","choices":[{"index":0,"message":{"role":"assistant","content":"hi","tool_calls":[{"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"p\":1}"}},{"id":"call_2","type":"function","function":{"name":"bad","arguments":"not json"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"completion_tokens_details":{"reasoning_tokens":2}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"candidates":[{"content":{"parts":[{"text":"hi"},{"functionCall":{"id":"call_1","name":"read","args":{"p":1}}},{"functionCall":{"id":"call_2","name":"bad","args":{"arguments":"not json"}}}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":3,"thoughtsTokenCount":2,"totalTokenCount":15},"modelVersion":"gemini-2.5-flash","responseId":"chatcmpl-1"}` + "\n"
	if string(got) != want {
		t.Errorf("answer\n got %s\nwant %s", got, want)
	}
	for _, bad := range []string{`not json`, `{"error":{"message":"x"}}`, `[]`} {
		if _, err := tr.answer([]byte(bad)); err == nil {
			t.Errorf("answer(%s): no error", bad)
		}
	}
}

// TestEvents checks a chat stream as Gemini's, in both forms: text as it
// comes, the calls whole with the finish reason and usage in the last
// element; a failure after the commit one error element.
func TestEvents(t *testing.T) {
	chunks := []string{
		`{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{"content":"Hel"}}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{"content":"lo"}}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read","arguments":""}}]}}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"p\":"}}]}}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"id":"c1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`,
	}
	head := `,"modelVersion":"m","responseId":"c1"}`
	elems := []string{
		`{"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"},"index":0}]` + head,
		`{"candidates":[{"content":{"parts":[{"text":"lo"}],"role":"model"},"index":0}]` + head,
		`{"candidates":[{"content":{"parts":[{"functionCall":{"id":"call_1","name":"read","args":{"p":1}}}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":4,"totalTokenCount":7}` + head,
	}
	for _, array := range []bool{false, true} {
		e := &events{form: form{array: array}, t: &translation{model: "m"}}
		var out []byte
		for _, c := range chunks {
			var err error
			if out, err = e.Chunk(out, []byte(c)); err != nil {
				t.Fatal(err)
			}
		}
		out = e.End(out)
		var want string
		if array {
			want = "[" + strings.Join(elems, ",\r\n") + "]\n"
			if ct := e.ContentType(); ct != "application/json" {
				t.Errorf("array form's content type %q", ct)
			}
		} else {
			for _, el := range elems {
				want += "data: " + el + "\n\n"
			}
		}
		if string(out) != want {
			t.Errorf("array %v:\n got %q\nwant %q", array, out, want)
		}
	}
	// A failure after the commit point: one error element, and the
	// array closed.
	for _, tc := range []struct {
		array bool
		want  string
	}{
		{false, `data: {"error":{"code":503,"message":"the provider's stream failed after it started (overloaded); the answer is incomplete","status":"UNAVAILABLE"}}` + "\n\n"},
		{true, `[{"error":{"code":503,"message":"the provider's stream failed after it started (overloaded); the answer is incomplete","status":"UNAVAILABLE"}}]` + "\n"},
	} {
		e := &events{form: form{array: tc.array}, t: &translation{model: "m"}}
		if got := string(e.Fail(nil, outcome.Overloaded)); got != tc.want {
			t.Errorf("Fail (array %v) = %q, want %q", tc.array, got, tc.want)
		}
	}
	n := &native{form{array: true}}
	out, _ := n.Chunk(nil, []byte(`{"a":1}`))
	out = n.Fail(out, outcome.RateLimited)
	if want := `[{"a":1},` + "\r\n" + `{"error":{"code":429,"message":"the provider's stream failed after it started (rate_limited); the answer is incomplete","status":"RESOURCE_EXHAUSTED"}}]` + "\n"; string(out) != want {
		t.Errorf("native array failure %q, want %q", out, want)
	}
	// Hostile chunks are a failure, not growth.
	for _, c := range []string{
		`{"choices":[{"index":9999999,"delta":{"content":"x"}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":100000,"function":{"arguments":"x"}}]}}]}`,
	} {
		e := &events{t: &translation{}}
		if _, err := e.Chunk(nil, []byte(c)); err == nil {
			t.Errorf("Chunk(%s): no error", c)
		}
	}
}
