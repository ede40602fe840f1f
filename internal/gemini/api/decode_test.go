package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/answer"
	"github.com/llmrouter/llmrouter/internal/intake"
)

// check is what the front door runs on a body before any provider:
// intake.Check, then decode; the error's status and Google-shaped body.
func check(body []byte) (int, string) {
	aerr := intake.Check(body)
	if aerr == nil {
		_, aerr = decode(body, false)
	}
	if aerr == nil {
		return http.StatusOK, ""
	}
	return aerr.Status, string(shape{}.AppendError(nil, &answer.Exchange{}, aerr))
}

// TestDecodeHostile: deep nesting, huge values and wrong types are each a
// 400 INVALID_ARGUMENT in Google's shape, naming the field.
func TestDecodeHostile(t *testing.T) {
	ok := `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]`
	for _, tc := range []struct {
		name, body, want string // want: a substring of the message
	}{
		{"not an object", `[1]`, "must be a JSON object"},
		{"not JSON", `{"contents":`, "not valid JSON"},
		{"deep nesting", `{"contents":[{"parts":[{"functionResponse":{"name":"x","response":` + strings.Repeat(`{"a":`, 300) + `1` + strings.Repeat(`}`, 300) + `}}]}]}`, "nests"},
		{"deep arrays", `{"contents":` + strings.Repeat(`[`, 10000) + strings.Repeat(`]`, 10000) + `}`, "nests"},
		{"no contents", `{}`, "contents must be an array"},
		{"empty contents", `{"contents":[]}`, "contents must not be empty"},
		{"contents a string", `{"contents":"hi"}`, "contents must be an array"},
		{"content a number", `{"contents":[1]}`, "contents[0] must be a Content"},
		{"role a number", `{"contents":[{"role":1,"parts":[]}]}`, "contents[0].role"},
		{"parts an object", `{"contents":[{"parts":{}}]}`, "contents[0].parts must be an array"},
		{"text a number", `{"contents":[{"parts":[{"text":1}]}]}`, "contents[0].parts[0].text"},
		{"functionCall without name", `{"contents":[{"parts":[{"functionCall":{"args":{}}}]}]}`, "functionCall.name"},
		{"args an array", `{"contents":[{"parts":[{"functionCall":{"name":"a","args":[]}}]}]}`, "functionCall.args"},
		{"response a string", `{"contents":[{"parts":[{"functionResponse":{"name":"a","response":"x"}}]}]}`, "functionResponse.response"},
		{"inlineData data a number", `{"contents":[{"parts":[{"inlineData":{"mimeType":"image/png","data":1}}]}]}`, "inlineData.data"},
		{"tools an object", ok + `,"tools":{}}`, "tools must be an array"},
		{"declaration without name", ok + `,"tools":[{"functionDeclarations":[{}]}]}`, "functionDeclarations[0].name"},
		{"parameters a string", ok + `,"tools":[{"functionDeclarations":[{"name":"a","parameters":"x"}]}]}`, "parameters"},
		{"systemInstruction a string", `{"systemInstruction":"be brief","contents":[{"parts":[{"text":"x"}]}]}`, "systemInstruction must be a Content"},
		{"generationConfig an array", ok + `,"generationConfig":[]}`, "generationConfig must be an object"},
		{"maxOutputTokens 1e999", ok + `,"generationConfig":{"maxOutputTokens":1e999}}`, "at most 2147483648"},
		{"maxOutputTokens 9e18", ok + `,"generationConfig":{"maxOutputTokens":9e18}}`, "at most 2147483648"},
		{"maxOutputTokens 0", ok + `,"generationConfig":{"maxOutputTokens":0}}`, "at least 1"},
		{"maxOutputTokens a string", ok + `,"generationConfig":{"maxOutputTokens":"100"}}`, "must be an integer"},
		{"maxOutputTokens 1.5", ok + `,"generationConfig":{"maxOutputTokens":1.5}}`, "must be an integer"},
		{"temperature a string", ok + `,"generationConfig":{"temperature":"hot"}}`, "temperature must be a number"},
		{"temperature 1e999", ok + `,"generationConfig":{"temperature":1e999}}`, "temperature must be a number"},
		{"stopSequences a string", ok + `,"generationConfig":{"stopSequences":"END"}}`, "stopSequences"},
		{"candidateCount 1e9", ok + `,"generationConfig":{"candidateCount":1000000000}}`, "candidateCount"},
		{"responseSchema a string", ok + `,"generationConfig":{"responseSchema":"x"}}`, "responseSchema"},
		{"duplicate key", `{"contents":[],"contents":[{"parts":[]}]}`, "repeats the top-level key"},
		{"invalid UTF-8", "{\"contents\":[{\"parts\":[{\"text\":\"\xff\"}]}]}", "UTF-8"},
		{"mode a number", ok + `,"toolConfig":{"functionCallingConfig":{"mode":1}}}`, "mode must be a string"},
		// A declaration's fields and the top level's are read in one walk
		// each: the first of a repeated key counts, as gjson's Get found it.
		{"declaration a string", ok + `,"tools":[{"functionDeclarations":["f"]}]}`, "tools[0].functionDeclarations[0] must be an object"},
		{"second declaration's name empty", ok + `,"tools":[{"functionDeclarations":[{"name":"a"},{"name":""}]}]}`, "tools[0].functionDeclarations[1].name must be"},
		{"name repeated, first a number", ok + `,"tools":[{"functionDeclarations":[{"name":1,"name":"a"}]}]}`, "functionDeclarations[0].name must be"},
		{"name escaped and empty", ok + `,"tools":[{"functionDeclarations":[{"n\u0061me":"","name":"a"}]}]}`, "functionDeclarations[0].name must be"},
		{"description a number", ok + `,"tools":[{"functionDeclarations":[{"name":"a","description":1}]}]}`, "functionDeclarations[0].description must be a string"},
		{"description repeated, first a number", ok + `,"tools":[{"functionDeclarations":[{"description":1,"name":"a","description":"d"}]}]}`, "description must be a string"},
		{"name before description", ok + `,"tools":[{"functionDeclarations":[{"description":1,"parameters":1}]}]}`, "functionDeclarations[0].name must be"},
		{"parametersJsonSchema an array", ok + `,"tools":[{"functionDeclarations":[{"name":"a","parametersJsonSchema":[]}]}]}`, "parametersJsonSchema must be an object"},
		{"parameters before parametersJsonSchema", ok + `,"tools":[{"functionDeclarations":[{"parametersJsonSchema":1,"name":"a","parameters":1}]}]}`, "parameters must be a Schema object"},
		{"second tool's declarations", ok + `,"tools":[{"functionDeclarations":[{"name":"a"}]},{"functionDeclarations":[{"name":"b","parameters":null}]}]}`, "tools[1].functionDeclarations[0].parameters must be a Schema object"},
		{"toolConfig an array", ok + `,"toolConfig":[]}`, "toolConfig must be an object"},
		{"functionCallingConfig a string", ok + `,"toolConfig":{"functionCallingConfig":"ANY"}}`, "functionCallingConfig must be an object"},
		{"allowedFunctionNames a string", ok + `,"toolConfig":{"functionCallingConfig":{"allowedFunctionNames":"a"}}}`, "allowedFunctionNames"},
		{"systemInstruction's part after contents", `{"contents":[{"parts":[{"text":"x"}]}],"systemInstruction":{"parts":[{"text":1}]}}`, "systemInstruction.parts[0].text"},
		{"generationConfig after tools", ok + `,"tools":[{"functionDeclarations":[{"name":"a"}]}],"generationConfig":{"maxOutputTokens":0}}`, "at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := check([]byte(tc.body))
			if status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400", status)
			}
			if !strings.HasPrefix(body, `{"error":{"code":400,"message":`) || !strings.HasSuffix(body, `,"status":"INVALID_ARGUMENT"}}`) {
				t.Errorf("body %s, not Google's 400", body)
			}
			if !strings.Contains(body, tc.want) {
				t.Errorf("body %s, want it to say %q", body, tc.want)
			}
		})
	}
	// The first of a repeated key counts: these are accepted.
	for _, body := range []string{
		ok + `,"tools":[{"functionDeclarations":[{"name":"a","name":1,"description":"d","description":1,"parameters":{},"parameters":1}]}]}`,
		ok + `,"tools":[{"functionDeclarations":[{"name":"a","description":"d","parametersJsonSchema":{"type":"object"},"parametersJsonSchema":[]}]},{"googleSearch":{}}],` +
			`"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["a"]}},"generationConfig":{"maxOutputTokens":5}}`,
	} {
		if status, msg := check([]byte(body)); status != http.StatusOK {
			t.Errorf("%s: %d %s, want accepted", body, status, msg)
		}
	}
	// The largest accepted maxOutputTokens is the bound.
	d, aerr := decode([]byte(ok+`,"generationConfig":{"maxOutputTokens":2147483648}}`), false)
	if aerr != nil || d.maxTokens != 1<<31 {
		t.Errorf("maxOutputTokens 2^31: %v %d", aerr, d.maxTokens)
	}
}

func TestStatusWords(t *testing.T) {
	for status, want := range map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
		413: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 502: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"} {
		if got := statusWord(status); got != want {
			t.Errorf("statusWord(%d) = %s, want %s", status, got, want)
		}
	}
}
