package store

import (
	"container/list"
	"context"
	"sync"
	"time"

	"github.com/llmrouter/llmrouter/internal/responses/wire"
)

// Memory is the Store in the router's own memory: each response for
// Config.TTL, at most Config.MaxStored at once, the oldest evicted first.
// It never fails but with ErrNotFound. Its clock is injected: expiry uses
// the readings of now (monotonic time.Now() in the router, a fake clock
// in tests).
//
// A stored turn holds the turns it continued, so a chain expands into the
// whole conversation after its earlier responses expired or were evicted:
// what those turns hold stays in memory while a stored response continues
// them, and no longer. The Response JSON of an evicted response is let go
// at once.
type Memory struct {
	now func() time.Time

	mu    sync.Mutex // guards every field below
	cfg   Config
	byID  map[string]*entry
	order list.List         // *entry, oldest first: with one TTL for all, also expiry order
	items map[string]*entry // item id → the live entry whose turn holds it
}

// entry is one stored response.
type entry struct {
	rec  *Record
	at   time.Time     // when stored
	elem *list.Element // in Memory.order
}

var (
	_ Store      = (*Memory)(nil)
	_ ItemFinder = (*Memory)(nil)
)

// NewMemory returns an empty Memory for c (zero fields take defaults);
// now nil means time.Now.
func NewMemory(c Config, now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, cfg: c.WithDefaults(), byID: make(map[string]*entry), items: make(map[string]*entry)}
}

// Configure applies a new config (a reload): a lower cap evicts the
// oldest at once; a shorter TTL expires entries at once.
func (m *Memory) Configure(c Config) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cfg = c.WithDefaults()
	m.pruneLocked(now)
}

// Len is the number of responses held.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.byID)
}

// Put stores r, evicting the oldest past the cap.
func (m *Memory) Put(_ context.Context, r *Record) error {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.byID[r.ID]; old != nil {
		m.removeLocked(old)
	}
	e := &entry{rec: r, at: now}
	e.elem = m.order.PushBack(e)
	m.byID[r.ID] = e
	if t := r.Turn; t != nil {
		for _, items := range [2][]wire.Item{t.Input, t.Output} {
			for i := range items {
				if id := items[i].ID; id != "" {
					m.items[id] = e
				}
			}
		}
	}
	m.pruneLocked(now)
	return nil
}

// Get returns the live record for id, or ErrNotFound.
func (m *Memory) Get(_ context.Context, id string) (*Record, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pruneLocked(now)
	if e := m.byID[id]; e != nil {
		return e.rec, nil
	}
	return nil, ErrNotFound
}

// Delete removes id, or reports ErrNotFound.
func (m *Memory) Delete(_ context.Context, id string) error {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pruneLocked(now)
	e := m.byID[id]
	if e == nil {
		return ErrNotFound
	}
	m.removeLocked(e)
	return nil
}

// FindItem returns the item with id from a live stored response, or
// ErrNotFound.
func (m *Memory) FindItem(_ context.Context, id string) (wire.Item, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pruneLocked(now)
	if e := m.items[id]; e != nil {
		t := e.rec.Turn
		for _, items := range [2][]wire.Item{t.Input, t.Output} {
			for i := range items {
				if items[i].ID == id {
					return items[i], nil
				}
			}
		}
	}
	return wire.Item{}, ErrNotFound
}

// pruneLocked removes the expired entries and those past the cap, oldest
// first.
func (m *Memory) pruneLocked(now time.Time) {
	for f := m.order.Front(); f != nil; f = m.order.Front() {
		e := f.Value.(*entry)
		if m.order.Len() <= m.cfg.MaxStored && now.Sub(e.at) < m.cfg.TTL {
			return
		}
		m.removeLocked(e)
	}
}

// removeLocked takes e out of the store. Its turn stays reachable from
// the turns that continue it; its Response JSON is let go.
func (m *Memory) removeLocked(e *entry) {
	m.order.Remove(e.elem)
	delete(m.byID, e.rec.ID)
	if t := e.rec.Turn; t != nil {
		for _, items := range [2][]wire.Item{t.Input, t.Output} {
			for i := range items {
				if id := items[i].ID; id != "" && m.items[id] == e {
					delete(m.items, id)
				}
			}
		}
	}
}
