// Package store keeps the Responses API's stored responses: what GET and
// DELETE /v1/responses/{id}, previous_response_id, item_reference and
// input_items read (docs/ARCHITECTURE.md, "Responses API").
//
// Model: a Record is one stored response, its Response JSON and its Turn;
// a Turn holds its input and output items and the Turn it continued, so
// a chain of turns is the whole conversation:
//
//	Record resp_3 ──► Turn 3 ──Prev──► Turn 2 ──Prev──► Turn 1
//	Record resp_2 ──────────────────────┘
//	(resp_1 evicted: its Response JSON is gone, Turn 1 lives on in the chain)
//
// Store is the interface the router uses; every method can fail, and
// ErrNotFound is the only failure that says something about the id.
// Memory is the implementation in the router's own memory, with its TTL
// and caps; the store shared by the replicas of a fleet (shared_state)
// is internal/responses/store/redisstore's.
//
// Invariants:
//   - Records and turns never change once stored: readers share them
//     without locks.
//   - A store: false response is never handed to a Store.
package store
