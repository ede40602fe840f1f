package pool

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/upstream"
	"github.com/llmrouter/llmrouter/internal/upstream/shared"
	"github.com/llmrouter/llmrouter/internal/warm/record"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func spec(name string, maxConc int) provider.Descriptor {
	return provider.Descriptor{Name: name, Type: "fake", Config: provider.Config{Name: name, Type: "fake", MaxConcurrency: maxConc}}
}

var pol = shared.Policy{Breaker: breaker.DefaultConfig()}

// cloud is an adapter that names where it goes beyond base_url, as
// Bedrock's and Vertex's do (provider.Endpointer).
type cloud struct{ endpoint string }

func (cloud) Do(context.Context, *provider.Request) (*provider.Response, error) {
	return nil, errors.New("not called")
}
func (cloud) Supports(provider.Op) bool { return false }
func (c cloud) Endpoint() string        { return c.endpoint }

// TestKeepsStateAcrossUpdate: a runtime whose settings did not change
// is kept with what it learned; one whose settings changed starts fresh;
// a removed provider's series are deleted.
func TestKeepsStateAcrossUpdate(t *testing.T) {
	// The probers read the real clock: so does this test.
	t0 := time.Now()
	reg := prometheus.NewRegistry()
	s := New(upstream.Options{}, reg)
	defer s.Close()
	ups, err := s.Update([]provider.Descriptor{spec("a", 10), spec("b", 10), spec("gone", 10)}, pol)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range ups[:2] {
		for range 5 {
			p, err := u.Acquire(t0, 1)
			if err != nil {
				t.Fatal(err)
			}
			p.Release(t0, upstream.Result{Kind: outcome.ServerError})
		}
	}
	// b changes its max_concurrency; a cloud provider would change its
	// region the same way, through its adapter's Endpoint (the next update).
	// a keeps its settings and reads a new key (and gets a new adapter).
	rotated := spec("a", 10)
	rotated.Adapter, rotated.Secrets = cloud{}, []string{"sk-rotated-key"}
	next, err := s.Update([]provider.Descriptor{rotated, spec("b", 20)}, pol)
	if err != nil {
		t.Fatal(err)
	}
	if next[0] != ups[0] || next[0].Status(t0).State != "open" {
		t.Errorf("a (unchanged): kept %v, state %s; want the same runtime, still open", next[0] == ups[0], next[0].Status(t0).State)
	}
	if got := next[0].Redact("bad key sk-rotated-key"); got != "bad key [redacted]" {
		t.Errorf("a kept with a new key redacts %q, want the new key hidden", got)
	}
	if d := next[0].Descriptor(); d.Adapter != rotated.Adapter {
		t.Errorf("a kept: its description holds the old adapter %v, want the reload's", d.Adapter)
	}
	if next[1] == ups[1] || next[1].Status(t0).State != "closed" {
		t.Errorf("b (max_concurrency changed): kept %v, state %s; want a fresh runtime, closed", next[1] == ups[1], next[1].Status(t0).State)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]bool{} // family{provider}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "provider" {
					series[mf.GetName()+"{"+l.GetValue()+"}"] = true
				}
			}
		}
	}
	for k := range series {
		if strings.HasSuffix(k, "{gone}") {
			t.Errorf("series of the removed provider remain: %s", k)
		}
	}
	for _, fam := range []string{"llmrouter_bulkhead_rejections_total", "llmrouter_upstream_requests_total", "llmrouter_breaker_transitions_total", "llmrouter_breaker_probes_total", "llmrouter_breaker_state"} {
		if !series[fam+"{b}"] {
			t.Errorf("%s{provider=b} is not there from start-up", fam)
		}
	}
	moved := spec("a", 10)
	moved.Adapter = cloud{"https://bedrock-runtime.us-west-2.amazonaws.com region=us-west-2 profile="}
	if again, err := s.Update([]provider.Descriptor{moved, spec("b", 20)}, pol); err != nil || again[0] == next[0] || again[0].Status(t0).State != "closed" {
		t.Errorf("a (endpoint changed): kept %v, state %s, err %v; want a fresh runtime, closed", again[0] == next[0], again[0].Status(t0).State, err)
	}
	tighter := pol
	tighter.Breaker.FailureThreshold.Consecutive++
	if again, err := s.Update([]provider.Descriptor{spec("a", 10), spec("b", 20)}, pol); err != nil {
		t.Fatal(err)
	} else if last, err := s.Update([]provider.Descriptor{spec("a", 10), spec("b", 20)}, tighter); err != nil || last[1] == again[1] {
		t.Errorf("the breaker policy changed: b kept %v, err %v; want a fresh runtime", last[1] == again[1], err)
	}
	if _, err := s.Update([]provider.Descriptor{spec("a", 1), spec("a", 1)}, pol); err == nil {
		t.Error("duplicate names accepted")
	}
}

// TestRestoredOpenCountsAsATransition: restoring an open breaker sets the
// gauge and counts the transition as a trip does, through the Pool's
// metrics, and tells the saver.
func TestRestoredOpenCountsAsATransition(t *testing.T) {
	now := time.Now() // the prober reads the real clock
	reg := prometheus.NewRegistry()
	set := New(upstream.Options{}, reg)
	defer set.Close()
	ups, err := set.Update([]provider.Descriptor{spec("p", 10)}, pol)
	if err != nil {
		t.Fatal(err)
	}
	fp := *ups[0].Export(now).Fingerprint
	s := record.State{Fingerprint: &fp, Breaker: &breaker.Persisted{State: "open", OpenUntil: now.Round(0).Add(time.Minute), Trips: 2}}
	if err := ups[0].Restore(now, s, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		family, to string
		want       float64
	}{{"llmrouter_breaker_state", "", 2}, {"llmrouter_breaker_transitions_total", "open", 1}} {
		if got := sample(t, reg, c.family, "p", c.to); got != c.want {
			t.Errorf("%s{provider=p,to=%q} = %v, want %v", c.family, c.to, got, c.want)
		}
	}
	select {
	case <-set.Changed():
	default:
		t.Error("the restored trip did not signal the saver")
	}
}

// sample is the value of family's series for provider (and to, when not
// ""); -1 when absent.
func sample(t *testing.T, reg *prometheus.Registry, family, provider, to string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != family {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if (l.GetName() == "provider" && l.GetValue() != provider) || (l.GetName() == "to" && l.GetValue() != to) {
					continue next
				}
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	return -1
}
