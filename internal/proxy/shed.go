package proxy

import (
	"context"
	"net/http"
	"strings"
	"time"
)

// Priority shedding (DESIGN §5.7): when more than shed_open_fraction of the
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

// shed applies priority shedding. done means the request was answered;
// release, when not nil, frees the request's shedding slot.
func (s *Server) shed(ctx context.Context, w http.ResponseWriter, r *http.Request, ex *exchange, st *state) (done bool, release func()) {
	prio, ok := priority(r)
	if !ok {
		ex.status = http.StatusBadRequest
		writeError(w, ex.status, "invalid_request_error", "invalid_request_error", "",
			"X-LLMRouter-Priority must be high, normal or low", 0)
		return true, nil
	}
	share, reopen := s.openShare(st, s.now())
	if share <= st.shedAbove || prio == "high" {
		return false, nil
	}
	refuse := func() (bool, func()) {
		s.m.shed.WithLabelValues(prio).Inc()
		ex.status = http.StatusServiceUnavailable
		writeError(w, ex.status, "server_error", "service_unavailable", "",
			"most providers are unavailable; "+prio+" priority requests are shed, retry later", max(reopen, time.Second))
		return true, nil
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
		return false, func() { <-s.shedSlots }
	case <-t.C:
		return refuse()
	case <-ctx.Done():
		return refuse()
	}
}
