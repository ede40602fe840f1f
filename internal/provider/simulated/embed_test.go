package simulated

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// embeddings sends body and returns the vectors, decoded from numbers or
// base64 (with whether they were base64), and the usage.
func embeddings(t testing.TB, a *Adapter, body string) ([]openaiwire.Vector, openaiwire.EmbeddingUsage) {
	t.Helper()
	resp, err := a.Do(context.Background(), req(provider.OpEmbeddings, body, false))
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	var list openaiwire.EmbeddingList
	if err := json.Unmarshal(resp.Body, &list); err != nil {
		t.Fatalf("answer %s: %v", resp.Body, err)
	}
	out := make([]openaiwire.Vector, len(list.Data))
	for i, d := range list.Data {
		if d.Index != i || d.Object != "embedding" {
			t.Errorf("data[%d] is index %d object %q", i, d.Index, d.Object)
		}
		out[i] = d.Embedding
	}
	if list.Object != "list" || list.Model != "sim-1" || resp.Usage.PromptTokens == 0 || list.Usage.PromptTokens != resp.Usage.PromptTokens {
		t.Errorf("list %q model %q usage %+v (adapter %+v)", list.Object, list.Model, list.Usage, resp.Usage)
	}
	return out, list.Usage
}

func norm(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

// TestEmbeddings: unit vectors of the asked dimensions, as numbers or
// base64 float32s, the same for the same input whatever the request
// around it, a shorter one being the longer one cut and scaled again.
func TestEmbeddings(t *testing.T) {
	a, _ := New(provider.Config{Name: "s"}, Config{})
	tests := []struct {
		name, body string
		n, dims    int
		base64     bool
	}{
		{"string", `{"input":"hello"}`, 1, 8, false},
		{"strings", `{"input":["a","b","c"]}`, 3, 8, false},
		{"token ids are one input", `{"input":[1,2,3]}`, 1, 8, false},
		{"lists of token ids", `{"input":[[1,2],[3]]}`, 2, 8, false},
		{"dimensions", `{"input":["hello"],"dimensions":256}`, 1, 256, false},
		{"largest", `{"input":"hello","dimensions":3072,"encoding_format":"float"}`, 1, 3072, false},
		{"base64", `{"input":["hello","world"],"encoding_format":"base64"}`, 2, 8, true},
		{"base64 dimensions", `{"input":"hello","encoding_format":"base64","dimensions":1536}`, 1, 1536, true},
		{"nulls are defaults", `{"input":"hello","encoding_format":null,"dimensions":null}`, 1, 8, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs, _ := embeddings(t, a, tt.body)
			if len(vs) != tt.n {
				t.Fatalf("%d embeddings, want %d", len(vs), tt.n)
			}
			for i, v := range vs {
				if len(v.Values) != tt.dims || v.Base64 != tt.base64 {
					t.Errorf("[%d]: %d values, base64 %v; want %d, %v", i, len(v.Values), v.Base64, tt.dims, tt.base64)
				}
				if n := norm(v.Values); math.Abs(n-1) > 1e-4 {
					t.Errorf("[%d]: norm %g, want 1", i, n)
				}
			}
			if tt.n > 1 && vs[0].Values[0] == vs[1].Values[0] {
				t.Errorf("two inputs, one vector: %v", vs)
			}
		})
	}

	hello := func(body string) []float64 {
		vs, _ := embeddings(t, a, body)
		return vs[0].Values
	}
	full := hello(`{"input":"hello","dimensions":64}`)
	for _, body := range []string{`{"input":["hello"],"dimensions":64}`, `{"model":"other","input":"hello","dimensions":64,"encoding_format":"base64"}`} {
		got := hello(body)
		for i := range full {
			if math.Abs(got[i]-full[i]) > 1e-6 {
				t.Fatalf("%s: [%d] = %g, want %g as for the same input elsewhere", body, i, got[i], full[i])
			}
		}
	}
	// Six decimals, scaled up by the cut: compare within 1e-5.
	short := hello(`{"input":"hello","dimensions":4}`)
	n := norm(full[:4])
	for i := range short {
		if math.Abs(short[i]-full[i]/n) > 1e-5 {
			t.Errorf("dimensions 4: [%d] = %g, want %g (the 64 cut and scaled)", i, short[i], full[i]/n)
		}
	}
}

// TestEmbeddingErrors: values OpenAI refuses are 400 client errors naming
// the field.
func TestEmbeddingErrors(t *testing.T) {
	a, _ := New(provider.Config{Name: "s"}, Config{})
	for _, tt := range []struct{ body, param string }{
		{`{"input":"x","dimensions":0}`, "dimensions"},
		{`{"input":"x","dimensions":3073}`, "dimensions"},
		{`{"input":"x","dimensions":1.5}`, "dimensions"},
		{`{"input":"x","dimensions":"8"}`, "dimensions"},
		{`{"input":"x","dimensions":-1}`, "dimensions"},
		{`{"input":"x","encoding_format":"hex"}`, "encoding_format"},
		{`{"input":"x","encoding_format":1}`, "encoding_format"},
	} {
		_, err := a.Do(context.Background(), req(provider.OpEmbeddings, tt.body, false))
		var oe *outcome.Error
		if !errors.As(err, &oe) || oe.Kind != outcome.ClientError || oe.Status != 400 || oe.Param != tt.param {
			t.Errorf("%s: got %v, want a 400 client error naming %s", tt.body, err, tt.param)
		}
	}
}

// TestCompletionsUsage: a legacy completion reports its usage, whole and
// in the stream's usage chunk.
func TestCompletionsUsage(t *testing.T) {
	a, _ := New(provider.Config{Name: "s"}, Config{Reply: "one two"})
	resp, err := a.Do(context.Background(), req(provider.OpCompletions, `{"prompt":"x"}`, false))
	if err != nil {
		t.Fatal(err)
	}
	var c openaiwire.Completion
	if err := json.Unmarshal(resp.Body, &c); err != nil || c.Usage == nil || c.Usage.CompletionTokens != 2 || c.Usage.PromptTokens == 0 || c.Usage.TotalTokens != c.Usage.PromptTokens+2 {
		t.Fatalf("answer %s: %v", resp.Body, err)
	}
	resp, err = a.Do(context.Background(), req(provider.OpCompletions, `{"prompt":"x"}`, true))
	if err != nil {
		t.Fatal(err)
	}
	var last []byte
	for {
		p, err := resp.Stream.Next()
		if err != nil {
			break
		}
		last = append(last[:0], p...)
	}
	if err := json.Unmarshal(last, &c); err != nil || c.Usage == nil || c.Usage.CompletionTokens != 2 || len(c.Choices) != 0 {
		t.Errorf("last chunk %s, want the usage with no choices", last)
	}
}
