package recent

import (
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// MaxAttempts is how many attempts a record keeps; a request that made
// more keeps its first MaxAttempts-1 and its last.
const MaxAttempts = 4

// Bytes a record keeps of the client's model name and of a provider's
// error message: copied into the record, so that the ring never holds on
// to a request's memory (a long name, a whole error body).
const (
	MaxAsked = 64
	MaxError = 160
)

// Attempt is one attempt of a request: its provider and how it ended
// (an outcome kind's word; "ok" for the one that served).
type Attempt struct {
	Provider string `json:"provider"`
	Kind     string `json:"kind"`
}

// Request is what the status page shows of one request. Its strings are
// the request's id and configured names (model, provider, key), which
// the request holds anyway, and two texts copied into fixed arrays (the
// model the client named, the last failure's message): a record
// allocates nothing. Since fills Asked, Error and Attempts.
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
	// Error is the last failed attempt's message (the provider's,
	// redacted of its secrets), cut to MaxError bytes; "" when none
	// failed.
	Error string `json:"error"`

	attempts [MaxAttempts]Attempt
	asked    [MaxAsked]byte
	askedN   uint8
	err      [MaxError]byte
	errN     uint8
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

// SetAsked copies the model name the client sent, cut to MaxAsked bytes
// at a character's start.
func (q *Request) SetAsked(s string) { q.askedN = uint8(copy(q.asked[:], cut(s, MaxAsked))) }

// SetError copies a failure's message, cut to MaxError bytes at a
// character's start.
func (q *Request) SetError(s string) { q.errN = uint8(copy(q.err[:], cut(s, MaxError))) }

// cut is s cut to n bytes, at the start of a character.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Ring is the last requests, oldest overwritten first. It is safe for
// concurrent use; the zero Ring keeps nothing (New sizes it), and so does
// a nil *Ring.
type Ring struct {
	subs atomic.Int32 // watchers (Watchers)

	mu   sync.Mutex // guards buf, next, wake
	buf  []Request
	next uint64 // the sequence number of the next record (1-based)
	// wake is closed by the next Add, when a watcher waits for one
	// (next); nil when none does, so that Add allocates nothing, watched
	// or not, and a watcher that coalesces costs Add one close per wait.
	wake chan struct{}
}

// New returns a ring of the last n requests.
func New(n int) *Ring {
	return &Ring{buf: make([]Request, n), next: 1}
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
	wake := r.wake
	r.wake = nil
	r.mu.Unlock()
	if wake != nil {
		close(wake)
	}
}

// Since appends to dst the records after seq still held, oldest first,
// and returns them with the last sequence number written (to pass as seq
// next time). At most limit records are returned (the newest; limit <= 0:
// every one held).
func (r *Ring) Since(seq uint64, limit int, dst []Request) ([]Request, uint64) {
	from := len(dst)
	dst, last := r.Copy(seq, limit, dst)
	for i := from; i < len(dst); i++ {
		q := &dst[i]
		q.Attempts = append([]Attempt{}, q.attempts[:min(q.N, MaxAttempts)]...)
		q.Asked = string(q.asked[:q.askedN])
		q.Error = string(q.err[:q.errN])
	}
	return dst, last
}

// spanLocked returns the sequence numbers of the records after seq still
// held, at most limit of them (the newest; limit <= 0: every one held):
// first > last when there are none.
func (r *Ring) spanLocked(seq uint64, limit int) (first, last uint64) {
	last = r.next - 1
	first = seq + 1
	n := uint64(len(r.buf))
	if limit > 0 && uint64(limit) < n {
		n = uint64(limit)
	}
	if last >= n && first <= last-n {
		first = last - n + 1
	}
	return first, last
}

// Watch registers a watcher: next returns a channel closed at the next
// Add; stop unregisters it (more than once is fine).
func (r *Ring) Watch() (next func() <-chan struct{}, stop func()) {
	r.subs.Add(1)
	var once sync.Once
	return func() <-chan struct{} {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.wake == nil {
				r.wake = make(chan struct{})
			}
			return r.wake
		}, func() {
			once.Do(func() { r.subs.Add(-1) })
		}
}

// Watchers is how many watchers are registered.
func (r *Ring) Watchers() int { return int(r.subs.Load()) }
