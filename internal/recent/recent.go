package recent

import (
	"sync"
	"sync/atomic"
	"time"
)

// MaxAttempts is how many attempts a record keeps; a request that made
// more keeps its first MaxAttempts-1 and its last.
const MaxAttempts = 4

// Attempt is one attempt of a request: its provider and how it ended
// (an outcome kind's word; "ok" for the one that served).
type Attempt struct {
	Provider string `json:"provider"`
	Kind     string `json:"kind"`
}

// Request is what the status page shows of one request. Its strings are
// the request's id and configured names (model, provider, key), which
// the request holds anyway: a record allocates nothing. Asked is the model
// the client named, cut to 64 bytes.
type Request struct {
	Seq      uint64        `json:"seq"`
	At       time.Time     `json:"at"`
	ID       string        `json:"id"`
	API      string        `json:"api"`
	Asked    string        `json:"asked"`
	Model    string        `json:"model"`
	Key      string        `json:"key"`
	Status   int           `json:"status"`
	Provider string        `json:"provider"`
	Target   string        `json:"target"`
	Tier     int           `json:"tier"`
	N        int           `json:"attempt_count"`
	Attempts []Attempt     `json:"attempts"`
	TTFT     time.Duration `json:"ttft_ns"`
	Total    time.Duration `json:"total_ns"`
	CostUSD  float64       `json:"cost_usd"`
	Degraded bool          `json:"degraded"`
	Hedged   bool          `json:"hedged"`
	Rescued  bool          `json:"rescued"`
	// Affinity is what affinity did: kept, moved, new, or "" (none).
	Affinity string `json:"affinity"`

	attempts [MaxAttempts]Attempt
}

// AddAttempt appends an attempt (the first MaxAttempts-1 and the last are
// kept); N counts them all.
func (q *Request) AddAttempt(provider, kind string) {
	i := q.N
	if i >= MaxAttempts {
		i = MaxAttempts - 1
	}
	q.attempts[i] = Attempt{Provider: provider, Kind: kind}
	q.N++
}

// Ring is the last requests, oldest overwritten first. It is safe for
// concurrent use; the zero Ring keeps nothing (New sizes it).
type Ring struct {
	subs atomic.Int32 // watchers; Add wakes them only when there are any

	mu   sync.Mutex // guards buf, next, wake
	buf  []Request
	next uint64        // the sequence number of the next record (1-based)
	wake chan struct{} // closed at the next Add while there are watchers
}

// New returns a ring of the last n requests.
func New(n int) *Ring {
	return &Ring{buf: make([]Request, n), next: 1, wake: make(chan struct{})}
}

// Add records q (copied; q may be reused) and wakes the watchers, if any.
func (r *Ring) Add(q *Request) {
	if r == nil || len(r.buf) == 0 {
		return
	}
	r.mu.Lock()
	seq := r.next
	r.next++
	slot := &r.buf[seq%uint64(len(r.buf))]
	*slot = *q
	slot.Seq = seq
	var wake chan struct{}
	if r.subs.Load() > 0 {
		wake, r.wake = r.wake, make(chan struct{})
	}
	r.mu.Unlock()
	if wake != nil {
		close(wake)
	}
}

// Since appends to dst the records after seq still held, oldest first,
// and returns them with the last sequence number written (to pass as seq
// next time).
func (r *Ring) Since(seq uint64, dst []Request) ([]Request, uint64) {
	if r == nil || len(r.buf) == 0 {
		return dst, seq
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	last := r.next - 1
	first := seq + 1
	if n := uint64(len(r.buf)); last >= n && first <= last-n {
		first = last - n + 1
	}
	for s := first; s <= last; s++ {
		q := r.buf[s%uint64(len(r.buf))]
		n := min(q.N, MaxAttempts)
		q.Attempts = append([]Attempt(nil), q.attempts[:n]...)
		dst = append(dst, q)
	}
	return dst, last
}

// Watch registers a watcher; until stop is called, Add wakes it. next
// returns a channel closed at the next Add.
func (r *Ring) Watch() (next func() <-chan struct{}, stop func()) {
	r.subs.Add(1)
	var once sync.Once
	return func() <-chan struct{} {
			r.mu.Lock()
			defer r.mu.Unlock()
			return r.wake
		}, func() {
			once.Do(func() { r.subs.Add(-1) })
		}
}
