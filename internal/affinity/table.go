package affinity

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultCapacity is how many conversations a Table remembers at most: an
// entry takes about 110 bytes with its index, so a full table holds about
// 7 MiB (docs/ARCHITECTURE.md, "Memory").
const DefaultCapacity = 1 << 16

// Target is where a conversation was served: a provider and its model.
type Target struct {
	Provider, Model string
}

// Table remembers, for each conversation, the target that served its last
// turn: at most its capacity of them, the least recently served evicted
// first; an entry older than the TTL reads as absent. Safe for
// concurrent use.
type Table struct {
	capacity int
	m        *metrics
	shared   Shared // nil: this process's table only

	mu      sync.Mutex // guards index, entries, head, tail, free
	index   map[Key]int32
	entries []entry // grown up to capacity, then reused
	// head and tail are the most and least recently served entries; free
	// chains the slots of removed entries through next. -1: none.
	head, tail, free int32
}

// entry is one conversation's; prev and next link the served order
// (prev towards head).
type entry struct {
	key        Key
	target     Target
	at         time.Time // last served
	prev, next int32
}

// New returns an empty Table of at most capacity conversations (<= 0:
// DefaultCapacity) whose affinity_total series go to reg (nil keeps them
// private).
func New(capacity int, reg prometheus.Registerer) *Table {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	return &Table{capacity: capacity, m: newMetrics(reg), index: make(map[Key]int32), head: -1, tail: -1, free: -1}
}

// Shared is a fleet's view of the conversations (docs/ARCHITECTURE.md,
// "Affinity", "Shared"): what any router served them with last.
type Shared interface {
	// Get reads key's entry in one bounded call; err says the shared
	// view could not answer (it is down, or the call failed), and the
	// table's own entry answers instead.
	Get(key Key) (target Target, ok bool, err error)
	// Put records key's entry for ttl without waiting (queued).
	Put(key Key, target Target, ttl time.Duration)
}

// Share makes the table read and record through s first (nil: this
// process's entries only). Call it before the table is used.
func (t *Table) Share(s Shared) { t.shared = s }

// Get returns the target that served key's conversation last, unless that
// was more than ttl before now (the entry is then dropped). With a shared
// view, its answer comes first; the table's own entry answers when it
// fails or knows nothing (an entry recorded while it was away).
func (t *Table) Get(key Key, now time.Time, ttl time.Duration) (Target, bool) {
	if t.shared != nil {
		if tg, ok, err := t.shared.Get(key); err == nil && ok {
			return tg, true
		}
	}
	return t.getLocal(key, now, ttl)
}

func (t *Table) getLocal(key Key, now time.Time, ttl time.Duration) (Target, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i, ok := t.index[key]
	if !ok {
		return Target{}, false
	}
	if now.Sub(t.entries[i].at) > ttl {
		t.removeLocked(i)
		return Target{}, false
	}
	return t.entries[i].target, true
}

// Put records that target served key's conversation at now, in the
// shared view too (queued) when there is one. A new conversation takes a
// free slot, or the least recently served one's when that expired (older
// than ttl) or the table is full.
func (t *Table) Put(key Key, target Target, now time.Time, ttl time.Duration) {
	if t.shared != nil {
		t.shared.Put(key, target, ttl)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if i, ok := t.index[key]; ok {
		t.entries[i].target, t.entries[i].at = target, now
		t.unlinkLocked(i)
		t.pushLocked(i)
		return
	}
	var i int32
	switch {
	case t.free >= 0:
		i, t.free = t.free, t.entries[t.free].next
	case t.tail >= 0 && (len(t.entries) >= t.capacity || now.Sub(t.entries[t.tail].at) > ttl):
		i = t.tail
		delete(t.index, t.entries[i].key)
		t.unlinkLocked(i)
	default:
		if len(t.entries) == cap(t.entries) {
			// Doubling, never past the capacity: a full table holds no
			// spare room.
			grown := make([]entry, len(t.entries), min(max(2*cap(t.entries), 64), t.capacity))
			copy(grown, t.entries)
			t.entries = grown
		}
		t.entries = append(t.entries, entry{})
		i = int32(len(t.entries) - 1)
	}
	t.entries[i] = entry{key: key, target: target, at: now}
	t.index[key] = i
	t.pushLocked(i)
}

// Len is how many conversations the table holds, expired ones not yet
// dropped included.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.index)
}

// removeLocked drops entry i and frees its slot.
func (t *Table) removeLocked(i int32) {
	delete(t.index, t.entries[i].key)
	t.unlinkLocked(i)
	t.entries[i] = entry{next: t.free}
	t.free = i
}

// unlinkLocked takes entry i out of the served order.
func (t *Table) unlinkLocked(i int32) {
	e := &t.entries[i]
	if e.prev >= 0 {
		t.entries[e.prev].next = e.next
	} else {
		t.head = e.next
	}
	if e.next >= 0 {
		t.entries[e.next].prev = e.prev
	} else {
		t.tail = e.prev
	}
	e.prev, e.next = -1, -1
}

// pushLocked makes entry i the most recently served.
func (t *Table) pushLocked(i int32) {
	e := &t.entries[i]
	e.prev, e.next = -1, t.head
	if t.head >= 0 {
		t.entries[t.head].prev = i
	}
	t.head = i
	if t.tail < 0 {
		t.tail = i
	}
}

// Outcome is what affinity did for a served request with an identity.
type Outcome uint8

const (
	// OutcomeNew: the conversation had no entry (or its request is its own
	// opening); it is recorded where ranking sent it.
	OutcomeNew Outcome = iota
	// OutcomeKept: served by the target that served its last turn.
	OutcomeKept
	// OutcomeMoved: served elsewhere (that target was unhealthy, full, not in
	// the best available tier, or failed); it sticks to its new home.
	OutcomeMoved
)

var outcomeNames = [...]string{OutcomeNew: "new", OutcomeKept: "kept", OutcomeMoved: "moved"}

func (o Outcome) String() string { return outcomeNames[o] }

// Count counts o in affinity_total.
func (t *Table) Count(o Outcome) { t.m.total[o].Inc() }

// metrics are the table's series (docs/ARCHITECTURE.md, "Metrics").
type metrics struct {
	total [len(outcomeNames)]prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "llmrouter", Name: "affinity_total",
		Help: "Served requests with a conversation identity, by what affinity did: kept on the target that served the conversation last, moved elsewhere, or new."},
		[]string{"outcome"})
	if reg != nil {
		reg.MustRegister(vec)
	}
	m := &metrics{}
	for o, name := range outcomeNames {
		m.total[o] = vec.WithLabelValues(name) // every series from the start
	}
	return m
}
