package store

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/llmrouter/llmrouter/internal/responses/wire"
)

// Memory is the Store in the router's own memory: each response for
// Config.TTL, at most Config.MaxStored at once and at most Config.MaxBytes
// of them, the oldest evicted first. It fails only with ErrNotFound, and
// a Put with ErrTooLarge. Its clock is injected: expiry uses the readings
// of now (monotonic time.Now() in the router, a fake clock in tests).
//
// A stored turn holds the turns it continued, so a chain expands into the
// whole conversation after its earlier responses expired or were evicted:
// what those turns hold stays in memory while a stored response continues
// them, and no longer. The byte count follows that: a turn is counted
// once, from the first stored response that holds it (itself or through
// its chain) until the last such response leaves; the Response JSON of a
// response is counted while it is stored and let go when it leaves.
type Memory struct {
	now func() time.Time

	mu    sync.Mutex // guards every field below
	cfg   Config
	byID  map[string]*entry
	order list.List         // *entry, oldest first: with one TTL for all, also expiry order
	items map[string]*entry // item id → the live entry whose turn holds it
	held  map[*Turn]*hold   // the turns live entries hold, directly or through a chain
	bytes int64             // estimated: live entries and the turns they hold
}

// entry is one stored response.
type entry struct {
	rec  *Record
	at   time.Time     // when stored
	elem *list.Element // in Memory.order
	size int64         // the entry's own estimate, its turns not included
}

// hold counts the holders of one turn: the live entries whose turn it is
// and the held turns whose Prev it is.
type hold struct {
	refs  int
	size  int64 // the turn's own estimate
	chain int64 // size plus that of every turn before it
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
	return &Memory{now: now, cfg: c.WithDefaults(), byID: make(map[string]*entry),
		items: make(map[string]*entry), held: make(map[*Turn]*hold)}
}

// Configure applies a new config (a reload): lower caps evict the oldest
// at once; a shorter TTL expires entries at once.
func (m *Memory) Configure(c Config) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cfg = c.WithDefaults()
	m.pruneLocked(now)
}

// Usage is the number of responses held and the estimated bytes they and
// the turns they hold take.
func (m *Memory) Usage() (count int, bytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.byID), m.bytes
}

// Put stores r, evicting the oldest past the caps. A response whose
// conversation alone (its own size and every turn of its chain) is larger
// than Config.MaxBytes is not stored: ErrTooLarge.
func (m *Memory) Put(_ context.Context, r *Record) error {
	now := m.now()
	size := recordSize(r)
	m.mu.Lock()
	defer m.mu.Unlock()
	if total := size + m.chainLocked(r.Turn); total > m.cfg.MaxBytes {
		return fmt.Errorf("%w: about %d bytes with the conversation it continues; responses.max_bytes is %d", ErrTooLarge, total, m.cfg.MaxBytes)
	}
	if old := m.byID[r.ID]; old != nil {
		m.removeLocked(old)
	}
	e := &entry{rec: r, at: now, size: size}
	e.elem = m.order.PushBack(e)
	m.byID[r.ID] = e
	m.bytes += size
	m.holdLocked(r.Turn)
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

// pruneLocked removes the expired entries and those past the caps,
// oldest first. It ends: once the store is empty it holds no bytes.
func (m *Memory) pruneLocked(now time.Time) {
	for f := m.order.Front(); f != nil; f = m.order.Front() {
		e := f.Value.(*entry)
		if m.order.Len() <= m.cfg.MaxStored && m.bytes <= m.cfg.MaxBytes && now.Sub(e.at) < m.cfg.TTL {
			return
		}
		m.removeLocked(e)
	}
}

// removeLocked takes e out of the store. Its turn stays reachable from
// the turns that continue it (and counted while a live entry holds
// them); its Response JSON is let go.
func (m *Memory) removeLocked(e *entry) {
	m.order.Remove(e.elem)
	delete(m.byID, e.rec.ID)
	m.bytes -= e.size
	if t := e.rec.Turn; t != nil {
		for _, items := range [2][]wire.Item{t.Input, t.Output} {
			for i := range items {
				if id := items[i].ID; id != "" && m.items[id] == e {
					delete(m.items, id)
				}
			}
		}
	}
	m.releaseLocked(e.rec.Turn)
}

// chainLocked is the estimated size of t and every turn before it.
func (m *Memory) chainLocked(t *Turn) int64 {
	var n int64
	for ; t != nil; t = t.Prev {
		if h := m.held[t]; h != nil {
			return n + h.chain
		}
		n += turnSize(t)
	}
	return n
}

// holdLocked adds one holder to t: a turn not held yet is counted and
// holds its Prev in turn. It loops rather than recurses: a chain may be
// long.
func (m *Memory) holdLocked(t *Turn) {
	var added []*hold // the new holds, newest first
	for ; t != nil; t = t.Prev {
		if h := m.held[t]; h != nil {
			h.refs++
			break
		}
		h := &hold{refs: 1, size: turnSize(t)}
		m.held[t] = h
		m.bytes += h.size
		added = append(added, h)
	}
	var before int64
	if t != nil {
		before = m.held[t].chain
	}
	for i := len(added) - 1; i >= 0; i-- {
		before += added[i].size
		added[i].chain = before
	}
}

// releaseLocked drops one holder of t: a turn left with none is no longer
// counted and lets its Prev go in turn.
func (m *Memory) releaseLocked(t *Turn) {
	for ; t != nil; t = t.Prev {
		h := m.held[t]
		if h.refs--; h.refs > 0 {
			return
		}
		delete(m.held, t)
		m.bytes -= h.size
	}
}

// The fixed costs of the estimate, in bytes, measured on linux/amd64
// (docs/ARCHITECTURE.md, "Memory"): an entry (its record, map and list
// slots, and the Response slice), a turn, an item and a content part
// (their structs and the slice slots holding them).
const (
	entryCost = 320
	turnCost  = 96
	itemCost  = 176
	partCost  = 128
)

// Size is the estimated memory of r with the whole conversation it holds
// (its chain of turns), as Memory counts it, and the number of turns in
// that chain: what a store across the network bounds a Put by.
func Size(r *Record) (bytes int64, turns int) {
	bytes = recordSize(r)
	for t := r.Turn; t != nil; t = t.Prev {
		turns++
		bytes += turnSize(t)
	}
	return bytes, turns
}

// recordSize is the estimated memory of r's own entry: its id and its
// Response JSON.
func recordSize(r *Record) int64 {
	return entryCost + int64(2*len(r.ID)+cap(r.Response))
}

// turnSize is the estimated memory of t's items, those kept as sent
// (Raw) included.
func turnSize(t *Turn) int64 {
	n := int64(turnCost)
	for _, items := range [2][]wire.Item{t.Input, t.Output} {
		for i := range items {
			it := &items[i]
			n += itemCost + int64(len(it.Type)+len(it.ID)+len(it.Role)+len(it.Text)+len(it.CallID)+len(it.Name)+len(it.Arguments)+cap(it.Raw))
			for j := range it.Parts {
				p := &it.Parts[j]
				n += partCost + int64(len(p.Type)+len(p.Text)+len(p.ImageURL)+len(p.Detail)+len(p.FileData)+len(p.Filename))
			}
		}
	}
	return n
}
