package proxy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/clientkeys"
	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/recent"
)

// TestRecent: every answered request leaves one record in the ring (the
// status page's recent requests): its id, the model asked and matched,
// the key's name, the attempts (each failure's provider and kind, then
// the serving one), the serving target and the last failure's message,
// and never the prompt, the answer or the key's secret.
func TestRecent(t *testing.T) {
	const (
		prompt = "the secret plan is tangerine"
		secret = "sk-team-0123456789"
		answer = `{"ok":"banana split"}`
	)
	const hostile = `<img src=x onerror=alert(1)>`
	a := &fake{do: fail(outcome.ServerError, 500, "upstream broke: "+hostile)}
	b := &fake{do: ok(answer)}
	s := newServer(t, limits.Config{}, nil, target{name: "a", a: a}, target{name: "b", tier: 1, a: b})
	ring := recent.New(8)
	s.out.KeepRecent(ring)
	h := s.Handler()
	body := `{"model":"m","messages":[{"role":"user","content":"` + prompt + `"}]}`
	for _, c := range []struct {
		name, body, id string
		status         int
		want           func(t *testing.T, q recent.Request)
	}{
		{"served after a failover", body, "req-1", 200, func(t *testing.T, q recent.Request) {
			if q.Asked != "m" || q.Model != "m" || q.Provider != "b" || q.Target != "b-model" || q.Tier != 1 || !q.Degraded {
				t.Errorf("record %+v", q)
			}
			want := []recent.Attempt{{Provider: "a", Kind: "server_error"}, {Provider: "b", Kind: "ok"}}
			if q.N != 2 || len(q.Attempts) != 2 || q.Attempts[0] != want[0] || q.Attempts[1] != want[1] {
				t.Errorf("attempts %d %+v, want %+v", q.N, q.Attempts, want)
			}
			if q.Error != "upstream broke: "+hostile {
				t.Errorf("error %q", q.Error)
			}
			if q.Total <= 0 || q.At.IsZero() {
				t.Errorf("total %v at %v", q.Total, q.At)
			}
		}},
		{"a model not configured", `{"model":"` + hostile + `","messages":[{"role":"user","content":"hi"}]}`, "req-2", 404, func(t *testing.T, q recent.Request) {
			if q.Asked != hostile || q.Model != "" || q.N != 0 || q.Provider != "" {
				t.Errorf("record %+v", q)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, last := ring.Since(0, 0, nil)
			w := do(h, "POST", "/v1/chat/completions", "application/json", c.body, "X-Request-ID", c.id, "Authorization", "Bearer "+secret)
			if w.Code != c.status {
				t.Fatalf("status %d, want %d: %s", w.Code, c.status, w.Body)
			}
			got, _ := ring.Since(last, 0, nil)
			if len(got) != 1 {
				t.Fatalf("%d records, want 1", len(got))
			}
			q := got[0]
			if q.ID != c.id || q.Status != c.status || q.API != "chat" {
				t.Errorf("id %q status %d api %q", q.ID, q.Status, q.API)
			}
			c.want(t, q)
			js, _ := json.Marshal(got)
			for _, never := range []string{prompt, secret, "banana"} {
				if strings.Contains(string(js), never) {
					t.Errorf("the record holds %q: %s", never, js)
				}
			}
		})
	}
}

// TestRecentKey: the record names the client key, never its secret.
func TestRecentKey(t *testing.T) {
	s := keysServer(t, &fake{do: ok(`{"ok":true}`)}, nil, namedKey("team-a", "secret-a", clientkeys.Limits{}))
	ring := recent.New(4)
	s.out.KeepRecent(ring)
	w := do(s.Handler(), "POST", "/v1/chat/completions", "application/json", chatBody, "Authorization", "Bearer secret-a")
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	got, _ := ring.Since(0, 0, nil)
	if len(got) != 1 || got[0].Key != "team-a" {
		t.Fatalf("records %+v", got)
	}
	if js, _ := json.Marshal(got); strings.Contains(string(js), "secret-a") {
		t.Errorf("the record holds the key's secret: %s", js)
	}
}
