package store

import (
	"context"
	"errors"

	"github.com/llmrouter/llmrouter/internal/responses/wire"
)

// Store is where the router keeps the responses clients may read back
// (GET), delete, continue (previous_response_id) and list the input of
// (input_items). Implementations are safe for concurrent use.
//
// Every method may fail: a store across the network (Redis) can be down
// or slow. ErrNotFound means the store answered and holds nothing under
// the id; any other error means it could not answer, and the caller knows
// nothing about the id. Callers must not treat the second like the first:
// a conversation continued from a response the store could not read would
// silently lose its history (docs/ARCHITECTURE.md, "Responses API").
type Store interface {
	// Get returns the record stored under id.
	Get(ctx context.Context, id string) (*Record, error)
	// Put stores r under r.ID, replacing what was there. r and its turns
	// must not change afterwards: readers share them. An error means r is
	// not stored (ErrTooLarge, or the store could not be written).
	Put(ctx context.Context, r *Record) error
	// Delete removes id.
	Delete(ctx context.Context, id string) error
}

// ItemFinder is the optional ability to find an item of a stored response
// by the item's own id, for item_reference inputs (the Vercel AI SDK's
// default). A Store without it answers every item_reference as OpenAI
// answers an item it does not hold. The errors are Get's.
type ItemFinder interface {
	FindItem(ctx context.Context, id string) (wire.Item, error)
}

var (
	// ErrNotFound: nothing is stored under the id (never stored, store:
	// false, expired, evicted or deleted).
	ErrNotFound = errors.New("not found in the store of responses")
	// ErrTooLarge: a Put refused because the response, with the
	// conversation it holds, is larger than the store may hold at once.
	ErrTooLarge = errors.New("larger than the store of responses may hold")
)

// Record is one stored response.
type Record struct {
	// ID is the response's id (resp_…).
	ID string
	// Response is the Response JSON GET returns, one line.
	Response []byte
	// Turn is the conversation turn the response ended.
	Turn *Turn
	// Owner, when not "", names the provider that holds the response
	// while it runs (a background response of its own Responses API):
	// reads, deletes and cancels go to it, Response is its first answer
	// and Turn holds the input, no output yet. The record is replaced by a
	// whole one once the provider says the response finished.
	Owner string
}

// Turn is one turn of a conversation: its input items (item_references
// resolved; instructions are not kept, they are not inherited), its
// output items, and the turn it continued. A turn holds the turns before
// it, so a chain expands into the whole conversation even after the
// earlier responses left the store. Turns never change once stored.
type Turn struct {
	// ID is the id of the response that ended the turn: how a store
	// across the network (Redis) names the turn a new one continues.
	ID string
	// Prev is the turn this one continued (previous_response_id); nil for
	// a first turn.
	Prev          *Turn
	Input, Output []wire.Item
}

// Conversation is the conversation t ends: every turn's input and output,
// oldest first. It walks the chain without recursion, however long.
func (t *Turn) Conversation() []wire.Item {
	var chain []*Turn
	n := 0
	for p := t; p != nil; p = p.Prev {
		chain = append(chain, p)
		n += len(p.Input) + len(p.Output)
	}
	out := make([]wire.Item, 0, n)
	for i := len(chain) - 1; i >= 0; i-- {
		out = append(out, chain[i].Input...)
		out = append(out, chain[i].Output...)
	}
	return out
}
