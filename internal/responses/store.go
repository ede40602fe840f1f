package responses

import (
	"container/list"
	"sync"
	"time"
)

// Store keeps the responses clients may read back (GET), delete, continue
// (previous_response_id) and refer to (item_reference): each with the
// items of its turn, for Config.TTL, at most Config.MaxStored at once,
// the oldest evicted first. It is safe for concurrent use. Time enters as
// an argument: expiry uses the readings given (monotonic time.Now() in
// the router, a fake clock in tests).
//
// A stored response points to the one it continued, so a chain expands
// into the whole conversation even after its earlier turns expired or
// were evicted: what they hold stays in memory while a stored response
// continues them, and no longer.
type Store struct {
	mu    sync.Mutex // guards every field below and each Entry's response and elem
	cfg   Config
	byID  map[string]*Entry
	order list.List // *Entry, oldest first: with one TTL for all, also expiry order
	items map[string]*Entry
}

// Entry is one stored response. Its items never change once stored, so
// they are read without the lock.
type Entry struct {
	id     string
	parent *Entry // the response it continued; nil for a first turn
	input  []Item // this turn's input, item_references resolved; no instructions
	output []Item
	// response is the Response JSON GET returns; nil once the entry left
	// the store (its items may live on in a chain).
	response []byte
	at       time.Time     // when stored
	elem     *list.Element // in Store.order; nil once removed
}

// NewStore returns an empty Store for c (zero fields take defaults).
func NewStore(c Config) *Store {
	return &Store{cfg: c.WithDefaults(), byID: make(map[string]*Entry), items: make(map[string]*Entry)}
}

// Configure applies a new config (a reload): a lower cap evicts the
// oldest at once; a shorter TTL expires entries when they are next
// looked at.
func (s *Store) Configure(c Config, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg = c.WithDefaults()
	s.pruneLocked(now)
}

// Len is the number of responses held.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}

// put stores e at now, evicting the oldest past the cap.
func (s *Store) put(now time.Time, e *Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.byID[e.id]; old != nil {
		s.removeLocked(old)
	}
	e.at = now
	e.elem = s.order.PushBack(e)
	s.byID[e.id] = e
	for _, items := range [2][]Item{e.input, e.output} {
		for i := range items {
			if id := items[i].ID; id != "" {
				s.items[id] = e
			}
		}
	}
	s.pruneLocked(now)
}

// get returns the live entry for id, or nil.
func (s *Store) get(now time.Time, id string) *Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked(now)
	return s.byID[id]
}

// Response returns the stored Response JSON for id, or nil when the
// store does not hold it (never stored, expired, evicted or deleted).
func (s *Store) Response(now time.Time, id string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked(now)
	if e := s.byID[id]; e != nil {
		return e.response
	}
	return nil
}

// Delete removes id and reports whether the store held it.
func (s *Store) Delete(now time.Time, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked(now)
	e := s.byID[id]
	if e != nil {
		s.removeLocked(e)
	}
	return e != nil
}

// item returns the item with id from a live stored response.
func (s *Store) item(now time.Time, id string) (Item, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked(now)
	e := s.items[id]
	if e == nil {
		return Item{}, false
	}
	for _, items := range [2][]Item{e.input, e.output} {
		for i := range items {
			if items[i].ID == id {
				return items[i], true
			}
		}
	}
	return Item{}, false
}

// pruneLocked removes the expired entries and those past the cap, oldest
// first.
func (s *Store) pruneLocked(now time.Time) {
	for f := s.order.Front(); f != nil; f = s.order.Front() {
		e := f.Value.(*Entry)
		if s.order.Len() <= s.cfg.MaxStored && now.Sub(e.at) < s.cfg.TTL {
			return
		}
		s.removeLocked(e)
	}
}

// removeLocked takes e out of the store. Its items stay reachable from
// the chains that continue it; its Response JSON is let go.
func (s *Store) removeLocked(e *Entry) {
	s.order.Remove(e.elem)
	e.elem, e.response = nil, nil
	delete(s.byID, e.id)
	for _, items := range [2][]Item{e.input, e.output} {
		for i := range items {
			if id := items[i].ID; id != "" && s.items[id] == e {
				delete(s.items, id)
			}
		}
	}
}

// context is the conversation e ends: every turn's input and output,
// oldest first. It walks the chain without recursion, however long.
func (e *Entry) context() []Item {
	var chain []*Entry
	n := 0
	for p := e; p != nil; p = p.parent {
		chain = append(chain, p)
		n += len(p.input) + len(p.output)
	}
	out := make([]Item, 0, n)
	for i := len(chain) - 1; i >= 0; i-- {
		out = append(out, chain[i].input...)
		out = append(out, chain[i].output...)
	}
	return out
}
