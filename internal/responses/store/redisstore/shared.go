package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/llmrouter/llmrouter/internal/responses/store"
	"github.com/llmrouter/llmrouter/internal/responses/wire"
)

// Shared is the store of a router in a fleet (shared_state): Redis while
// the shared state is up, the router's own Memory while it is down
// (docs/ARCHITECTURE.md, "Responses API"):
//
//   - Put writes to Redis while up; while down, or when the write fails,
//     to Memory: the response is answered with store: true and can be
//     continued on this replica (only) — not on the others.
//   - Get, Delete and FindItem look in Memory first (it holds only what
//     this replica stored while Redis was away), then in Redis while up.
//   - An id Memory does not hold while Redis is down is an error, not
//     store.ErrNotFound: it may live in Redis, so the handler answers 503
//     with Retry-After, never 404.
type Shared struct {
	redis *Store
	local *store.Memory
	up    func() bool
}

var (
	_ store.Store      = (*Shared)(nil)
	_ store.ItemFinder = (*Shared)(nil)
)

// errDown is a read of an id this replica does not hold while Redis is
// down.
var errDown = errors.New("the shared state (Redis) is down and this replica does not hold the id")

// NewShared returns the store that uses r while up reports true and local
// otherwise.
func NewShared(r *Store, local *store.Memory, up func() bool) *Shared {
	return &Shared{redis: r, local: local, up: up}
}

// Configure applies a new config (a reload) to both stores.
func (s *Shared) Configure(c store.Config) {
	s.redis.Configure(c)
	s.local.Configure(c)
}

// Usage is Memory's: the responses this replica holds alone.
func (s *Shared) Usage() (int, int64) { return s.local.Usage() }

// Put stores r in Redis, or in Memory while Redis is down or failing.
func (s *Shared) Put(ctx context.Context, r *store.Record) error {
	if s.up() {
		err := s.redis.Put(ctx, r)
		if err == nil || errors.Is(err, store.ErrTooLarge) {
			return err
		}
	}
	return s.local.Put(ctx, r)
}

// Get returns id from Memory, else from Redis.
func (s *Shared) Get(ctx context.Context, id string) (*store.Record, error) {
	if rec, err := s.local.Get(ctx, id); err == nil {
		return rec, nil
	}
	if !s.up() {
		return nil, fmt.Errorf("read %s: %w", id, errDown)
	}
	return s.redis.Get(ctx, id)
}

// Delete removes id from both stores.
func (s *Shared) Delete(ctx context.Context, id string) error {
	lerr := s.local.Delete(ctx, id)
	if !s.up() {
		if lerr != nil {
			return fmt.Errorf("delete %s: %w", id, errDown)
		}
		return nil
	}
	err := s.redis.Delete(ctx, id)
	if lerr == nil && (err == nil || errors.Is(err, store.ErrNotFound)) {
		return nil
	}
	return err
}

// FindItem finds id in Memory, else in Redis.
func (s *Shared) FindItem(ctx context.Context, id string) (wire.Item, error) {
	if it, err := s.local.FindItem(ctx, id); err == nil {
		return it, nil
	}
	if !s.up() {
		return wire.Item{}, fmt.Errorf("find item %s: %w", id, errDown)
	}
	return s.redis.FindItem(ctx, id)
}
