package provider

import (
	"strconv"
	"strings"
	"testing"
)

func TestAppendBodyCapsTheOutputLimit(t *testing.T) {
	tests := []struct {
		name string
		op   Op
		cap  int64
		body string
		want string
	}{
		{"chat max_tokens above", OpChat, 16384, `{"model":"m","max_tokens":64000,"messages":[]}`, `{"model":"x","max_tokens":16384,"messages":[]}`},
		{"chat max_completion_tokens above", OpChat, 16384, `{"model":"m","max_completion_tokens":128000}`, `{"model":"x","max_completion_tokens":16384}`},
		{"chat both above, limit before model", OpChat, 100, `{"max_tokens":200,"model":"m","max_completion_tokens":300}`, `{"max_tokens":100,"model":"x","max_completion_tokens":100}`},
		{"chat one above, one under", OpChat, 100, `{"model":"m","max_tokens":50,"max_completion_tokens":300}`, `{"model":"x","max_tokens":50,"max_completion_tokens":100}`},
		{"at the cap", OpChat, 16384, `{"model":"m","max_tokens":16384}`, `{"model":"x","max_tokens":16384}`},
		{"under the cap", OpChat, 16384, `{"model":"m","max_tokens":1024}`, `{"model":"x","max_tokens":1024}`},
		{"no limit stays none", OpChat, 16384, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, `{"model":"x","messages":[{"role":"user","content":"hi"}]}`},
		{"null stays null", OpChat, 16384, `{"model":"m","max_tokens":null}`, `{"model":"x","max_tokens":null}`},
		{"exponent above", OpChat, 16384, `{"model":"m","max_tokens":1e5}`, `{"model":"x","max_tokens":16384}`},
		{"spaces kept", OpChat, 10, `{ "model" : "m" , "max_tokens" : 20 }`, `{ "model" : "x" , "max_tokens" : 10 }`},
		{"nested max_tokens untouched", OpChat, 10, `{"model":"m","metadata":{"max_tokens":20}}`, `{"model":"x","metadata":{"max_tokens":20}}`},
		{"escaped key", OpChat, 10, `{"model":"m","max\u005ftokens":20}`, `{"model":"x","max\u005ftokens":10}`},
		{"completions max_tokens", OpCompletions, 10, `{"model":"m","prompt":"p","max_tokens":20}`, `{"model":"x","prompt":"p","max_tokens":10}`},
		{"completions has no max_completion_tokens", OpCompletions, 10, `{"model":"m","max_completion_tokens":20}`, `{"model":"x","max_completion_tokens":20}`},
		{"messages max_tokens", OpMessages, 8192, `{"model":"m","max_tokens":32000,"messages":[]}`, `{"model":"x","max_tokens":8192,"messages":[]}`},
		{"responses max_output_tokens", OpResponses, 100, `{"model":"m","input":"hi","max_output_tokens":500}`, `{"model":"x","input":"hi","max_output_tokens":100}`},
		{"responses max_tokens is not its field", OpResponses, 100, `{"model":"m","max_tokens":500}`, `{"model":"x","max_tokens":500}`},
		{"embeddings have none", OpEmbeddings, 1, `{"model":"m","input":"a","max_tokens":5}`, `{"model":"x","input":"a","max_tokens":5}`},
		{"no cap", OpChat, 0, `{"model":"m","max_tokens":64000}`, `{"model":"x","max_tokens":64000}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := strings.Index(tt.body, `"m"`)
			r := &Request{Op: tt.op, Model: "x", Body: []byte(tt.body), ModelStart: start, ModelEnd: start + 3, MaxOutputTokens: tt.cap}
			if got := string(r.AppendBody([]byte("<"))); got != "<"+tt.want {
				t.Errorf("got %s, want <%s", got, tt.want)
			}
		})
	}
}

func TestAppendBodyCapsWithoutModelSpan(t *testing.T) {
	r := &Request{Op: OpMessages, Body: []byte(`{"max_tokens":64000}`), MaxOutputTokens: 16384}
	if got, want := string(r.AppendBody(nil)), `{"max_tokens":16384}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestAppendBodyCappedAllocatesNothing: the capped path reads the body in
// place, as the uncapped one does.
func TestAppendBodyCappedAllocatesNothing(t *testing.T) {
	body := []byte(`{"model":"claude-sonnet-4-5","max_tokens":64000,"messages":[{"role":"user","content":"hi \"there\""}],"stream":true}`)
	for _, c := range []int64{0, 16384} {
		r := &Request{Op: OpChat, Model: "gpt-4o", Body: body, ModelStart: 9, ModelEnd: 28, MaxOutputTokens: c}
		dst := make([]byte, 0, 2*len(body))
		if n := testing.AllocsPerRun(100, func() { dst = r.AppendBody(dst[:0]) }); n != 0 {
			t.Errorf("cap %d: %v allocations, want 0", c, n)
		}
	}
}

func TestCapOutput(t *testing.T) {
	tests := []struct{ n, limit, want int64 }{
		{64000, 16384, 16384},
		{16384, 16384, 16384},
		{1000, 16384, 1000},
		{4096, 0, 4096},
		{0, 100, 0},
	}
	for _, tt := range tests {
		if got := CapOutput(tt.n, tt.limit); got != tt.want {
			t.Errorf("CapOutput(%d, %d) = %d, want %d", tt.n, tt.limit, got, tt.want)
		}
	}
}

// BenchmarkAppendBody: what a cap costs a body passed through, the size
// of a Claude Code turn translated onto chat (about 100 KB, the limit
// last): the scan for the limit fields, against the model's splice alone.
func BenchmarkAppendBody(b *testing.B) {
	msgs := strings.Repeat(`{"role":"user","content":"a line of a long conversation with \"quotes\" and more text"},`, 1200)
	body := []byte(`{"model":"claude-sonnet-4-5","messages":[` + msgs[:len(msgs)-1] + `],"stream":true,"max_tokens":64000}`)
	for _, c := range []int64{0, 16384} {
		b.Run("cap="+strconv.FormatInt(c, 10), func(b *testing.B) {
			r := &Request{Op: OpChat, Model: "gpt-4o", Body: body, ModelStart: 9, ModelEnd: 28, MaxOutputTokens: c}
			dst := make([]byte, 0, 2*len(body))
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				dst = r.AppendBody(dst[:0])
			}
		})
	}
}
