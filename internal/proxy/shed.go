package proxy

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/llmrouter/llmrouter/internal/intake"
)

// Priority shedding (docs/ARCHITECTURE.md, "Degradation and shedding"): when more than shed_open_fraction of the
// providers have open breakers, the router is short of capacity. Low
// priority is refused at once (503, Retry-After: the earliest reopening);
// normal priority waits in a bounded queue for one of a bounded number of
// slots; high priority is served as usual.
const (
	// shedSlots bounds normal-priority requests in flight while shedding.
	shedSlots = 32
	// shedQueueLen bounds normal-priority requests waiting for a slot.
	shedQueueLen = 256
	// shedQueueWait bounds one request's wait for a slot.
	shedQueueWait = 5 * time.Second
)

// priority reads X-LLMRouter-Priority: high, normal (default) or low.
func priority(r *http.Request) (string, bool) {
	switch p := strings.ToLower(strings.TrimSpace(r.Header.Get("X-LLMRouter-Priority"))); p {
	case "":
		return "normal", true
	case "high", "normal", "low":
		return p, true
	}
	return "", false
}

// openShare is the share of providers whose breaker is open at now, and
// the earliest time one of them will probe again.
func (s *Server) openShare(st *state, now time.Time) (float64, time.Duration) {
	if len(st.order) == 0 {
		return 0, 0
	}
	open := 0
	var soonest time.Duration
	for _, p := range st.order {
		if isOpen, left := p.up.IsOpen(now); isOpen {
			open++
			if soonest == 0 || left < soonest {
				soonest = left
			}
		}
	}
	return float64(open) / float64(len(st.order)), soonest
}

// shed applies priority shedding. A refusal is the answer to give;
// release, when not nil, frees the request's shedding slot.
func (s *Server) shed(ctx context.Context, r *http.Request, st *state) (release func(), refusal *intake.Error) {
	prio, ok := priority(r)
	if !ok {
		return nil, intake.BadRequest("", "X-LLMRouter-Priority must be high, normal or low")
	}
	share, reopen := s.openShare(st, s.now())
	if share <= st.shedAbove || prio == "high" {
		return nil, nil
	}
	refuse := func() (func(), *intake.Error) {
		s.m.shed.WithLabelValues(prio).Inc()
		return nil, &intake.Error{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "service_unavailable",
			Message: "most providers are unavailable; " + prio + " priority requests are shed, retry later", RetryAfter: max(reopen, time.Second)}
	}
	if prio == "low" {
		return refuse()
	}
	if s.shedWaiting.Add(1) > shedQueueLen {
		s.shedWaiting.Add(-1)
		return refuse()
	}
	defer s.shedWaiting.Add(-1)
	t := time.NewTimer(shedQueueWait)
	defer t.Stop()
	select {
	case s.shedSlots <- struct{}{}:
		return func() { <-s.shedSlots }, nil
	case <-t.C:
		return refuse()
	case <-ctx.Done():
		return refuse()
	}
}
