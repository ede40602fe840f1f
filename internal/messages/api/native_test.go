package api

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/llmrouter/llmrouter/internal/provider"
)

// TestWithHeaders: the client's anthropic-version and anthropic-beta (its
// lines joined) are what a native adapter forwards, nothing else of the
// client's headers, in the one allocation a request takes anyway.
func TestWithHeaders(t *testing.T) {
	tests := []struct {
		name string
		h    http.Header
		want []provider.Header
	}{
		{"none", http.Header{"X-Api-Key": {"sk-client"}}, nil},
		{"version", http.Header{"Anthropic-Version": {"2023-06-01"}}, []provider.Header{{Name: "Anthropic-Version", Value: "2023-06-01"}}},
		{"both, betas on two lines", http.Header{"Anthropic-Version": {"2023-06-01"}, "Anthropic-Beta": {"a-1", "b-2"}, "Authorization": {"Bearer x"}},
			[]provider.Header{{Name: "Anthropic-Version", Value: "2023-06-01"}, {Name: "Anthropic-Beta", Value: "a-1,b-2"}}},
		{"beta only", http.Header{"Anthropic-Beta": {"a-1"}}, []provider.Header{{Name: "Anthropic-Beta", Value: "a-1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := withHeaders(tt.h, provider.Request{Op: provider.OpMessages, Model: "m"})
			if req.Op != provider.OpMessages || req.Model != "m" || !reflect.DeepEqual(req.Native, tt.want) {
				t.Errorf("got %+v, native %v; want the request with %v", req, req.Native, tt.want)
			}
			if raceEnabled {
				return
			}
			var sink *provider.Request
			if n := testing.AllocsPerRun(100, func() { sink = withHeaders(tt.h, provider.Request{}) }); n > 1+float64(len(tt.h["Anthropic-Beta"])/2) {
				t.Errorf("%v allocations, want 1 (and the join of several beta lines)", n)
			}
			_ = sink
		})
	}
}
