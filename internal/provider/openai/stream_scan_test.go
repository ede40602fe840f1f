package openai

import (
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// gjsonFinishes and gjsonUsage are readFinishes' whole read and
// readUsage as they were written with gjson: the reference the scans
// must agree with.
func gjsonFinishes(fin *provider.Finishes, data []byte) {
	pos := 0
	gjson.GetBytes(data, "choices").ForEach(func(_, c gjson.Result) bool {
		i := pos
		if idx := c.Get("index"); idx.Type == gjson.Number {
			i = int(idx.Int())
		}
		pos++
		if fr := c.Get("finish_reason"); fr.Type == gjson.String && fr.Str != "" {
			fin.Finish(i)
		} else {
			fin.Saw(i)
		}
		return true
	})
}

func gjsonUsage(s *stream, data []byte) bool {
	if !hasUsageObject(data) {
		return false
	}
	u := gjson.GetBytes(data, "usage")
	if !u.IsObject() {
		return false
	}
	if p := u.Get("prompt_tokens"); p.Exists() {
		s.usage.PromptTokens = p.Int()
	}
	if c := u.Get("completion_tokens"); c.Exists() {
		s.usage.CompletionTokens = c.Int()
	}
	if c := u.Get("prompt_tokens_details.cached_tokens"); c.Exists() {
		s.usage.CachedInput = c.Int()
	}
	return true
}

// TestScansReadAsGjson: the chunk reads that do without gjson
// (readFinishes' whole read, readUsage) record what gjson's reads did.
func TestScansReadAsGjson(t *testing.T) {
	chunks := []string{
		`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		`{"choices":[{"index":1,"finish_reason":null},{"index":0,"finish_reason":"length"}]}`,
		`{"choices":[{"delta":{"content":"x"}},{"finish_reason":"stop"}]}`,
		`{"choices":[{"index":2.5,"finish_reason":"stop"},{"index":1e1,"finish_reason":""}]}`,
		`{"choices":[{"index":-1,"finish_reason":"stop"},{"index":"3","finish_reason":"stop"}]}`,
		`{"choices":[{"index":70,"finish_reason":"stop"},{"index":99999999999999999999,"finish_reason":"x"}]}`,
		`{"choices":[{"index":9007199254740993,"finish_reason":"stop"}]}`,
		`{"choices":[{"index":0,"finish_reason":"st\u006fp"},{"index":1,"finish_reason":"\u0000"}]}`,
		`{"choices":[{"index":0,"index":1,"finish_reason":"stop","finish_reason":null}]}`,
		`{"choices":[{"ind\u0065x":1,"finish_reason":true}]}`,
		`{"choices":null,"finish_reason":"stop"}`,
		`{"choices":{"a":{"index":1,"finish_reason":"stop"},"b":3},"x":{"finish_reason":"stop"}}`,
		`{"choices":"text","finish_reason":"stop"}`,
		`{"choices":[1,[2],"s",null],"finish_reason":"stop"}`,
		`{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34,"prompt_tokens_details":{"cached_tokens":5}}}`,
		`{"usage":{"prompt_tokens":1.5,"completion_tokens":"7","prompt_tokens_details":null}}`,
		`{"usage":{"prompt_tokens":null,"completion_tokens":true,"prompt_tokens_details":{"cached_tokens":1e3}}}`,
		`{"usage":{"prompt_tokens":-3,"completion_tokens":12345678901234567890,"prompt_tokens_details":{"cached_tokens":{}}}}`,
		`{"usage":{"prompt_tokens":1,"prompt_tokens":2,"completion_tokens":3}}`,
		`{"x":{"usage":{"prompt_tokens":9}},"usage":null}`,
		`{"x":{"usage":{"prompt_tokens":9}}}`,
		`{"usage":{"prompt_tokens":9},"usage":{"prompt_tokens":8}}`,
	}
	for _, c := range chunks {
		data := []byte(c)
		if !jsoncheck.Valid(data) {
			t.Fatalf("not valid JSON: %s", c)
		}
		var got, want stream
		got.readFinishes(data)
		// The whole read is what readFinishes does past its byte scans;
		// the reference does the whole read for every chunk.
		if hasFinish(data) || wholeRead(data) {
			gjsonFinishes(&want.fin, data)
			if !reflect.DeepEqual(got.fin, want.fin) {
				t.Errorf("%s: finishes %+v, gjson's %+v", c, got.fin, want.fin)
			}
		}
		gotOK, wantOK := got.readUsage(data), gjsonUsage(&want, data)
		if gotOK != wantOK || got.usage != want.usage {
			t.Errorf("%s: usage %v %+v, gjson's %v %+v", c, gotOK, got.usage, wantOK, want.usage)
		}
	}
}

// wholeRead reports whether readFinishes reads data whole: an index
// other than a plain 0.
func wholeRead(data []byte) bool {
	for v := nextValue(data, `"index"`, 5); v != nil; v = nextValue(v, `"index"`, 5) {
		if !(v[0] == '0' && (len(v) == 1 || !isNumberByte(v[1]))) {
			return true
		}
	}
	return false
}

// TestReadUsageAsGjson: an answer's usage reads as gjson read it.
func TestReadUsageAsGjson(t *testing.T) {
	ref := func(op provider.Op, u gjson.Result) outcome.Usage {
		if op == provider.OpResponses {
			return outcome.Usage{PromptTokens: u.Get("input_tokens").Int(), CompletionTokens: u.Get("output_tokens").Int(),
				CachedInput: u.Get("input_tokens_details.cached_tokens").Int()}
		}
		return outcome.Usage{PromptTokens: u.Get("prompt_tokens").Int(), CompletionTokens: u.Get("completion_tokens").Int(),
			CachedInput: u.Get("prompt_tokens_details.cached_tokens").Int()}
	}
	for _, u := range []string{
		`{"prompt_tokens":12,"completion_tokens":34,"prompt_tokens_details":{"cached_tokens":5}}`,
		`{"input_tokens":12,"output_tokens":34,"input_tokens_details":{"cached_tokens":5}}`,
		`{"prompt_tokens":1.5,"completion_tokens":"7","prompt_tokens_details":null,"input_tokens":2e2}`,
		`{"prompt_tokens":null,"completion_tokens":true,"prompt_tokens_details":{"cached_tokens":-0}}`,
		`{"prompt_tokens":99999999999999999999,"output_tokens":false,"input_tokens_details":{"cached_tokens":"x"}}`,
		`{"pr\u006fmpt_tokens":3,"prompt_tokens":4,"completion_tokens":[1],"prompt_tokens_details":{"cached_tokens":{}}}`,
		`{}`,
	} {
		for _, op := range []provider.Op{provider.OpChat, provider.OpResponses} {
			if got, want := readUsage(op, gjson.Parse(u)), ref(op, gjson.Parse(u)); got != want {
				t.Errorf("%s %s: %+v, gjson's %+v", op, u, got, want)
			}
		}
	}
}

type keptResponse struct{ resp *http.Response }

func (k *keptResponse) RoundTrip(req *http.Request) (*http.Response, error) {
	k.resp = &http.Response{StatusCode: 200, Request: req, Header: http.Header{"Content-Type": {"text/event-stream"}, "X-Ratelimit-Remaining-Requests": {"9"}},
		Body: io.NopCloser(strings.NewReader("data: [DONE]\n\n"))}
	return k.resp, nil
}

// TestStreamDropsHeaders: a stream answer's header map and the request it
// answers are not kept for the stream's life (its body keeps the
// *http.Response), once read.
func TestStreamDropsHeaders(t *testing.T) {
	k := &keptResponse{}
	a, err := New(Compatible, provider.Config{Name: "up", BaseURL: "http://upstream.invalid/v1"}, "", Config{}, &http.Client{Transport: k})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := a.Do(t.Context(), &provider.Request{Op: provider.OpChat, Model: "m", Stream: true, Body: []byte(`{"model":"m","stream":true,"messages":[]}`)})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Stream.Close()
	if resp.RateLimit.RemainingRequests != 9 {
		t.Errorf("rate limit %+v, want the headers read", resp.RateLimit)
	}
	if k.resp.Header != nil {
		t.Error("the answer's header map is kept")
	}
	if k.resp.Request != nil {
		t.Error("the request is kept")
	}
}
