package answer

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestSeriesAcrossReloads: the request series a request uses are the
// registry's live ones, also after a reload deleted a model's series and
// a later one brought the model back (the series cache forgets deleted
// series), and a removed model's series are gone until used again.
func TestSeriesAcrossReloads(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := New(nil, reg)
	s.APIs("chat")
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	answered := func() {
		ex := exchange(1)
		ex.API, ex.status = "chat", 200
		s.Log(r, ex)
	}
	want := func(step string, requests int, duration int) {
		t.Helper()
		got := testutil.ToFloat64(s.m.requests.WithLabelValues("chat", "m", "200"))
		if int(got) != requests {
			t.Errorf("%s: requests_total %v, want %d", step, got, requests)
		}
		n, err := testutil.GatherAndCount(reg, "llmrouter_request_duration_seconds")
		if err != nil {
			t.Fatal(err)
		}
		if n != duration {
			t.Errorf("%s: %d request_duration_seconds series, want %d", step, n, duration)
		}
	}
	for _, step := range []struct {
		name             string
		do               func()
		requests, series int
	}{
		{"prepared", func() { s.Prepare([]string{"m"}, nil) }, 0, 1},
		{"answered", answered, 1, 1},
		{"answered again", answered, 2, 1},
		{"removed", func() { s.Prepare(nil, []string{"m"}) }, 0, 0},
		{"back", func() { s.Prepare([]string{"m"}, nil) }, 0, 1},
		{"answered after", answered, 1, 1},
	} {
		step.do()
		want(step.name, step.requests, step.series)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP llmrouter_requests_total Client requests by API (chat, completions, embeddings, responses), model and the HTTP status they were answered with.
# TYPE llmrouter_requests_total counter
llmrouter_requests_total{api="chat",code="200",model="m"} 1
`), "llmrouter_requests_total"); err != nil {
		t.Error(err)
	}
}
