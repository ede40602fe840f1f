package proxy

import (
	"sync/atomic"
	"time"

	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/guard"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/stats"
	"github.com/llmrouter/llmrouter/internal/throttle"
)

// rampDuration is how long a provider whose breaker just closed takes to
// grow back to its full share of traffic; it starts at rampFloor.
const (
	rampDuration = 30 * time.Second
	rampFloor    = 0.1
)

// live is what the router has learned about one provider: its guard
// (breaker, bulkhead, buckets), its stats and its adaptive throttle. It
// survives a reload that leaves the provider's settings unchanged.
type live struct {
	guard    *guard.Guard
	stats    *stats.Stats
	throttle *throttle.Throttle
	// closedAt is when the breaker last closed after a trip (unix nanos
	// of the proxy's clock); 0 means never tripped.
	closedAt atomic.Int64
}

func (s *Server) newLive(name string, gc guard.Config, k float64) *live {
	l := &live{stats: stats.New(stats.Config{}), throttle: throttle.New(k)}
	l.guard = guard.New(name, gc, s.capacity, breaker.Options{
		// Runs under the breaker's lock: counters and an atomic only.
		OnStateChange: func(name string, from, to breaker.State) {
			s.m.onStateChange(name, from, to)
			if to == breaker.Closed && from != breaker.Closed {
				l.closedAt.Store(s.now().UnixNano())
			}
		},
	})
	return l
}

// health is what ranking reads about the provider at now.
func (l *live) health(now time.Time) route.Health {
	st := l.stats.Snapshot(now)
	h := route.Health{
		SuccessRate: st.SuccessRate,
		Latency:     st.LatencyEMA,
		Recency:     st.Recency,
		Capacity:    l.guard.Capacity(now),
		Ramp:        1,
	}
	if c := l.closedAt.Load(); c != 0 {
		if since := now.Sub(time.Unix(0, c)); since < rampDuration {
			h.Ramp = max(rampFloor, float64(since)/float64(rampDuration))
		}
	}
	return h
}

// observe feeds one finished attempt to the stats and the throttle. An
// attempt that never reached the provider (canceled before an answer)
// tells neither anything.
func (l *live) observe(now time.Time, kind outcome.Kind, latency time.Duration) {
	l.stats.Observe(now, kind, latency)
	if kind.Counts() {
		l.throttle.Done(now, kind == outcome.OK || kind == outcome.ClientError)
	}
}
