package failover

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// suspecting is an adapter whose answer to a client's request is a client
// error suspecting a kind, and to the router's own minimal request
// (provider.Minimal) check (nil: a 200).
type suspecting struct {
	client, checks atomic.Int32
	suspect        outcome.Kind
	check          *outcome.Error
}

func (s *suspecting) Supports(provider.Op) bool { return true }
func (s *suspecting) Do(_ context.Context, req *provider.Request) (*provider.Response, error) {
	if bytes.Equal(req.Body, provider.Minimal(req.Op, req.Model).Body) {
		s.checks.Add(1)
		if s.check == nil {
			return &provider.Response{Body: []byte(`{}`)}, nil
		}
		return nil, s.check
	}
	s.client.Add(1)
	return nil, &outcome.Error{Kind: outcome.ClientError, Suspect: s.suspect, Status: 400,
		Message: "Unexpected value(s) `credit balance` for the `anthropic-beta` header."}
}

// TestWalkConfirmsSuspicion: a client error whose words suspect quota or a
// missing model is believed only when the router's own minimal request
// meets the same; then the provider is blocked (or the target disabled)
// and the request fails over; otherwise the client gets the error and the
// provider stays on. One check per cooldown.failure, whatever the rate.
func TestWalkConfirmsSuspicion(t *testing.T) {
	for _, tt := range []struct {
		name      string
		suspect   outcome.Kind
		check     *outcome.Error
		confirmed bool
	}{
		{"quota, check served", outcome.Quota, nil, false},
		{"quota, check met quota", outcome.Quota, &outcome.Error{Kind: outcome.ClientError, Suspect: outcome.Quota, Status: 400}, true},
		{"quota, check met billing_error", outcome.Quota, &outcome.Error{Kind: outcome.Quota, Status: 402}, true},
		{"quota, check failed otherwise", outcome.Quota, &outcome.Error{Kind: outcome.ServerError, Status: 500}, false},
		{"missing model, check served", outcome.TargetMissing, nil, false},
		{"missing model, check met it", outcome.TargetMissing, &outcome.Error{Kind: outcome.ClientError, Suspect: outcome.TargetMissing, Status: 404}, true},
		{"missing model, check met code", outcome.TargetMissing, &outcome.Error{Kind: outcome.TargetMissing, Status: 404}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := &suspecting{suspect: tt.suspect, check: tt.check}
				rg := newRig(t, retryEvery, tgt{name: "a", a: &fake{}}, tgt{name: "b", tier: 1, a: &fake{do: answers}})
				rg.provs["a"].Adapter = a
				for i := range 3 {
					r, res := rg.walk(t.Context(), time.Minute)
					if i > 0 && tt.confirmed {
						// Blocked or disabled: b serves without asking a.
						if servedBy(res) != "b" || a.client.Load() != 1 {
							t.Fatalf("request %d: served by %q, a asked %d times, want b and a asked once", i+1, servedBy(res), a.client.Load())
						}
						continue
					}
					switch {
					case tt.confirmed && (servedBy(res) != "b" || r.Attempts != 2):
						t.Fatalf("request %d: served by %q after %d attempts, want b after 2", i+1, servedBy(res), r.Attempts)
					case !tt.confirmed && (res.ClientError == nil || res.ClientError.Kind != outcome.ClientError || res.Provider != "a"):
						t.Fatalf("request %d: result %+v, want a's client error", i+1, res)
					}
				}
				if n := a.checks.Load(); n != 1 {
					t.Errorf("checks sent: %d, want 1 (one per cooldown.failure)", n)
				}
				up := rg.provs["a"].Up
				now := time.Now()
				if blocked := up.Gauges(now).OutOfQuota; blocked != (tt.confirmed && tt.suspect == outcome.Quota) {
					t.Errorf("out of quota: %v, want %v", blocked, tt.confirmed && tt.suspect == outcome.Quota)
				}
				if off := up.TargetOff("a-model"); off != (tt.confirmed && tt.suspect == outcome.TargetMissing) {
					t.Errorf("target off: %v, want %v", off, tt.confirmed && tt.suspect == outcome.TargetMissing)
				}
				if !tt.confirmed {
					// After cooldown.failure a new suspicion checks again.
					time.Sleep(31 * time.Second)
					rg.walk(t.Context(), time.Minute)
					if n := a.checks.Load(); n != 2 {
						t.Errorf("checks after cooldown.failure: %d, want 2", n)
					}
				}
			})
		})
	}
}

// TestWalkConfirmWaits: requests meeting the suspicion while the check
// runs wait for its verdict; one check is sent.
func TestWalkConfirmWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		a := &suspecting{suspect: outcome.Quota}
		slow := &slowCheck{suspecting: a, release: release}
		rg := newRig(t, retryEvery, tgt{name: "a", a: &fake{}})
		rg.provs["a"].Adapter = slow
		results := make(chan Result, 4)
		for range 4 {
			go func() { _, res := rg.walk(context.Background(), time.Minute); results <- res }()
		}
		synctest.Wait()
		close(release)
		for range 4 {
			if res := <-results; res.ClientError == nil {
				t.Errorf("result %+v, want the client error", res)
			}
		}
		if n := a.checks.Load(); n != 1 {
			t.Errorf("checks sent: %d, want 1", n)
		}
	})
}

// slowCheck holds the router's check until release is closed.
type slowCheck struct {
	*suspecting
	release chan struct{}
}

func (s *slowCheck) Do(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	if bytes.Equal(req.Body, provider.Minimal(req.Op, req.Model).Body) {
		<-s.release
	}
	return s.suspecting.Do(ctx, req)
}
