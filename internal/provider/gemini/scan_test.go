package gemini

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"testing"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
	"github.com/llmrouter/llmrouter/internal/sse"
)

// randomIDs are the ids made up when Gemini sends none.
var randomIDs = regexp.MustCompile(`(chatcmpl-|call_)[0-9a-f]{16,32}`)

func masked(b []byte) string { return randomIDs.ReplaceAllString(string(b), "${1}R") }

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// readsAsGjson feeds the events of in (SSE) to the translated stream's
// read and to its gjson reference, to the native stream's read and its
// reference, and to translateCompletion and its reference, and reports
// the first difference.
func readsAsGjson(t *testing.T, in []byte, includeUsage bool) {
	t.Helper()
	now := fuzzTime(1784140200)
	resp := func() *http.Response { return &http.Response{Body: io.NopCloser(bytes.NewReader(nil))} }
	a := newStream(context.Background(), resp(), "gemini-2.5-flash", includeUsage, now)
	b := newStream(context.Background(), resp(), "gemini-2.5-flash", includeUsage, now)
	na := &nativeStream{now: now, target: "gemini-2.5-flash"}
	nb := &nativeStream{now: now, target: "gemini-2.5-flash"}
	chunks := true
	r := sse.NewReader(bytes.NewReader(in))
	for {
		ev, err := r.Next()
		if err != nil {
			break
		}
		if len(ev.Data) == 0 {
			continue
		}
		data := bytes.Clone(ev.Data)
		if chunks {
			okA, errA := a.chunkOf(data)
			okB, errB := gjsonChunkOf(b, data)
			if okA != okB || errText(errA) != errText(errB) {
				t.Fatalf("%s: chunkOf %v %v, gjson's %v %v", data, okA, errA, okB, errB)
			}
			if okA {
				outA, _ := a.encode()
				outA = bytes.Clone(outA)
				outB, _ := b.encode()
				if masked(outA) != masked(outB) {
					t.Fatalf("%s: chunk\n%s\ngjson's\n%s", data, outA, outB)
				}
			}
			if a.usage != b.usage || a.model != b.model || !reflect.DeepEqual(a.fin, b.fin) ||
				!reflect.DeepEqual(a.roleSent, b.roleSent) || !reflect.DeepEqual(a.toolCalls, b.toolCalls) ||
				masked([]byte(a.chunk.ID)) != masked([]byte(b.chunk.ID)) {
				t.Fatalf("%s: stream state\n%+v %q %+v %v %v\ngjson's\n%+v %q %+v %v %v", data,
					a.usage, a.model, a.fin, a.roleSent, a.toolCalls, b.usage, b.model, b.fin, b.roleSent, b.toolCalls)
			}
			chunks = errA == nil
		}
		if jsoncheck.Valid(data) {
			errA := na.read(data)
			if isErr := gjsonNativeError(data); (errA != nil) != isErr {
				t.Fatalf("%s: native read %v, gjson reads an error event: %v", data, errA, isErr)
			} else if !isErr {
				gjsonNativeRead(nb, data)
			}
			if na.usage != nb.usage || na.model != nb.model || !reflect.DeepEqual(na.fin, nb.fin) {
				t.Fatalf("%s: native stream %+v %q %+v, gjson's %+v %q %+v", data, na.usage, na.model, na.fin, nb.usage, nb.model, nb.fin)
			}
		}
		outA, uA, errA := translateCompletion(data, "gemini-2.5-flash", now)
		outB, uB, errB := gjsonTranslateCompletion(data, "gemini-2.5-flash", now)
		if masked(outA) != masked(outB) || uA != uB || errText(errA) != errText(errB) {
			t.Fatalf("%s: translateCompletion\n%s %+v %v\ngjson's\n%s %+v %v", data, outA, uA, errA, outB, uB, errB)
		}
	}
}

// readsSeeds are events that read every field each way gjson reads it:
// numbers of every shape where counts and indexes go, strings, literals,
// objects and arrays where objects go, escaped and repeated keys.
var readsSeeds = []string{
	`{"candidates":[{"content":{"parts":[{"text":"**Planning**","thought":true}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":10,"totalTokenCount":10,"thoughtsTokenCount":3},"modelVersion":"gemini-2.5-flash","responseId":"abc123"}`,
	`{"candidates":[{"content":{"parts":[{"text":"Hel"},{"text":"lo"},{"text":" \"x\"\n"}],"role":"model"},"index":0}]}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"get_weather","args":{"city":"Oslo"}},"thoughtSignature":"CiQB0e2K"},{"functionCall":{"id":"fc-1","name":"get_time","args":{ "a" : [1, 2] }}}],"role":"model"},"index":0}]}`,
	`{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"totalTokenCount":18,"thoughtsTokenCount":3,"cachedContentTokenCount":4}}`,
	`{"candidates":[{"content":{"parts":[{"text":"a"}]},"index":0},{"content":{"parts":[{"text":"b"}]},"index":1,"finishReason":"MAX_TOKENS"}]}`,
	`{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":7}}`,
	`{"promptFeedback":{"blockReason":null}}`,
	`{"promptFeedback":"x","candidates":null}`,
	`{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`,
	`{"error":"not an object","candidates":[{"finishReason":"STOP"}]}`,
	`{"candidates":[{"index":99}]}`,
	`{"candidates":[{"index":-1}]}`,
	`{"candidates":[{"index":1.5,"finishReason":"STOP"},{"index":2e0},{"index":"3"},{"index":null},{"index":true}]}`,
	`{"candidates":[{"index":9007199254740993}]}`,
	`{"candidates":[{"index":0,"index":1,"finishReason":"STOP","finishReason":"SAFETY"}]}`,
	`{"candidates":[{"ind\u0065x":1,"finishR\u0065ason":"ST\u004fP","content":{"parts":[{"t\u0065xt":"\u0041"}]}}]}`,
	`{"candidates":[{"finishReason":5},{"finishReason":1.50},{"finishReason":true},{"finishReason":{}},{"finishReason":""}]}`,
	`{"candidates":{"a":{"index":1,"finishReason":"STOP"},"b":3}}`,
	`{"candidates":"text"}`,
	`{"candidates":"{\"index\":3,\"finishReason\":\"STOP\"}"}`,
	`{"candidates":[1,[2],"s",null,"{\"index\":4}"]}`,
	`{"candidates":[{"content":"parts"},{"content":{"parts":"x"}},{"content":{"parts":{"a":{"text":"in object"}}}},{"content":{"parts":[1,"t",null]}}]}`,
	`{"candidates":[{"content":{"parts":[{"text":5},{"text":1.25},{"text":true},{"text":null},{"text":{"a":1}},{"text":[1]}]},"finishReason":"STOP"}]}`,
	`{"candidates":[{"content":{"parts":[{"text":"t","thought":"true"},{"text":"u","thought":1},{"text":"v","thought":0.5},{"text":"w","thought":"F"},{"text":"x","thought":0},{"text":"y","thought":1e-400},{"text":"z","thought":{}}]}}]}`,
	`{"candidates":[{"content":{"parts":[{"functionCall":null},{"functionCall":"f"},{"functionCall":{"name":7,"args":[1],"id":2.5}},{"functionCall":{"name":"g","args":"{}"},"thought":true},{"functionCall":{"name":"h"},"thought":"no"}]}}]}`,
	`{"usageMetadata":{"promptTokenCount":1.5,"candidatesTokenCount":"7","thoughtsTokenCount":null,"cachedContentTokenCount":99999999999999999999}}`,
	`{"usageMetadata":{"promptTokenCount":-3,"candidatesTokenCount":true,"thoughtsTokenCount":[1],"cachedContentTokenCount":1e3}}`,
	`{"usageMetadata":"x","responseId":5,"modelVersion":1.50}`,
	`{"usageMetadata":{"promptTokenCount":1,"promptTokenCount":2},"usageMetadata":{"promptTokenCount":3}}`,
	`{"responseId":"r\u0031","modelVersion":"gemini-\u0032.5-pro","candidates":[]}`,
	`{"responseId":{"a":1},"modelVersion":true,"candidates":[{"finishReason":"STOP"}]}`,
	`{"x":{"candidates":[{"finishReason":"STOP"}],"error":{}}}`,
	`[{"candidates":[{"finishReason":"STOP"}]}]`,
	`"{\"error\":{}}"`,
	`  {"candidates":[{"finishReason":"RECITATION","content":{"parts":[{"text":"a"},{"functionCall":{"name":"f"}}]}}]}  `,
	`5`, `null`, `{}`, `{"candidates":[}`,
}

// TestReadsAsGjson: the event reads on jsonscan read what the gjson reads
// they replaced did, for the seeds, one stream of them and each alone.
func TestReadsAsGjson(t *testing.T) {
	var all []byte
	for i, s := range readsSeeds {
		ev := []byte("data: " + s + "\n\n")
		all = append(all, ev...)
		t.Run(fmt.Sprint(i), func(t *testing.T) { readsAsGjson(t, ev, true) })
	}
	readsAsGjson(t, all, true)
}

// FuzzReadsAsGjson: for any SSE bytes, the event reads on jsonscan read
// what the gjson reads they replaced did: the translated stream's chunks
// and state, the native stream's usage, model and finishes, and
// translateCompletion's answer.
func FuzzReadsAsGjson(f *testing.F) {
	for _, s := range readsSeeds {
		f.Add([]byte("data: "+s+"\n\n"), true)
	}
	f.Fuzz(func(t *testing.T, in []byte, includeUsage bool) { readsAsGjson(t, in, includeUsage) })
}
