package shed

import (
	"context"
	"strings"
	"sync/atomic"
	"time"
)

// Defaults of a Gate.
const (
	// Slots bounds normal-priority requests in flight while shedding.
	Slots = 32
	// QueueLen bounds normal-priority requests waiting for a slot.
	QueueLen = 256
	// QueueWait bounds one request's wait for a slot.
	QueueWait = 5 * time.Second
)

// Priority is a request's X-LLMRouter-Priority.
type Priority string

// The priorities.
const (
	High   Priority = "high"
	Normal Priority = "normal"
	Low    Priority = "low"
)

// ParsePriority reads a header value: high, normal or low, any case; ""
// is normal. ok is false for anything else.
func ParsePriority(v string) (p Priority, ok bool) {
	switch p := Priority(strings.ToLower(strings.TrimSpace(v))); p {
	case "":
		return Normal, true
	case High, Normal, Low:
		return p, true
	}
	return "", false
}

// Gate holds the normal-priority slots and queue. The zero Gate is not
// usable; build it with New.
type Gate struct {
	slots   chan struct{}
	waiting atomic.Int32
}

// New returns a Gate with the default slots.
func New() *Gate { return &Gate{slots: make(chan struct{}, Slots)} }

// Admit decides a request of priority p while shedding: ok false means
// refuse it; release, when not nil, frees its slot. Not shedding, or high
// priority, admits at once and holds nothing.
func (g *Gate) Admit(ctx context.Context, p Priority, shedding bool) (release func(), ok bool) {
	if !shedding || p == High {
		return nil, true
	}
	if p == Low {
		return nil, false
	}
	if g.waiting.Add(1) > QueueLen {
		g.waiting.Add(-1)
		return nil, false
	}
	defer g.waiting.Add(-1)
	t := time.NewTimer(QueueWait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return func() { <-g.slots }, true
	case <-t.C:
	case <-ctx.Done():
	}
	return nil, false
}
