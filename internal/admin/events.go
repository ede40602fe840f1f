package admin

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/llmrouter/llmrouter/internal/recent"
)

// The event stream's pace and bounds (docs/ARCHITECTURE.md, "Status
// page").
const (
	// maxSubscribers is how many event streams may be open at once; one
	// more is 503.
	maxSubscribers = 8
	// stateEvery is how often a stream sends the state.
	stateEvery = time.Second
	// coalesce is how long a stream gathers new requests before sending
	// them: at most 1/coalesce requests events a second, whatever the
	// traffic.
	coalesce = 250 * time.Millisecond
	// maxBatch bounds a requests event (the newest are sent); the first
	// event sends the whole ring.
	maxBatch = 100
	// eventWriteTimeout bounds each write to a subscriber: one that does
	// not read is dropped.
	eventWriteTimeout = 5 * time.Second
)

// events serves GET /admin/events: server-sent events, a state event every
// stateEvery (State), and requests events with the records the ring got
// since the last one. Nothing runs without a subscriber: each stream is
// its request's own goroutine, ended by the client leaving or the
// server's shutdown (the request's context, which the daemon ends at
// Shutdown through the server's BaseContext).
type events struct {
	state func() any    // the state event's value
	ring  *recent.Ring  // nil: no requests events
	subs  atomic.Int32  // open streams
	tick  time.Duration // stateEvery; tests shorten it
	// writeTimeout bounds each write (eventWriteTimeout; tests shorten
	// it).
	writeTimeout time.Duration
}

func (e *events) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if e.subs.Add(1) > maxSubscribers {
		e.subs.Add(-1)
		w.Header().Set("Retry-After", "5")
		deny(w, http.StatusServiceUnavailable, "too many status page event streams are open")
		return
	}
	defer e.subs.Add(-1)
	// The admin server's WriteTimeout is for requests that end: a stream
	// sets a deadline for each write instead. (Its ReadTimeout ends with
	// the request's headers: net/http clears it for the background read.)
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	var buf []byte
	write := func() bool {
		_ = rc.SetWriteDeadline(time.Now().Add(e.writeTimeout))
		if _, err := w.Write(buf); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	sendState := func() bool {
		js, err := json.Marshal(e.state()) // JSON has no raw newline: one data line
		if err != nil {
			return false
		}
		buf = append(append(append(buf[:0], "event: state\ndata: "...), js...), "\n\n"...)
		return write()
	}
	var (
		seq     uint64
		records []recent.Request
		wake    <-chan struct{}
		gather  <-chan time.Time
	)
	// sendRequests sends the records after seq, encoded where the ring
	// keeps them (recent.Request.AppendJSON: no reflection, no
	// allocation).
	sendRequests := func(limit int) bool {
		records, seq = e.ring.Copy(seq, limit, records[:0])
		if len(records) == 0 {
			return true
		}
		buf = append(buf[:0], "event: requests\ndata: ["...)
		for i := range records {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = records[i].AppendJSON(buf)
		}
		buf = append(buf, "]\n\n"...)
		return write()
	}
	// Waiting for the next record starts before reading the ring, so
	// that no record falls between the two.
	var next func() <-chan struct{}
	if e.ring != nil {
		var stop func()
		next, stop = e.ring.Watch()
		defer stop()
		wake = next()
	}
	if !sendState() || !sendRequests(0) {
		return
	}
	tick := time.NewTicker(e.tick)
	defer tick.Stop()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			if !sendState() {
				return
			}
		case <-wake:
			// Gather what follows for a while: one event for a burst.
			wake = nil
			if timer == nil {
				timer = time.NewTimer(coalesce)
			} else {
				timer.Reset(coalesce)
			}
			gather = timer.C
		case <-gather:
			gather = nil
			wake = next()
			if !sendRequests(maxBatch) {
				return
			}
		}
	}
}
