// Package responses is the front of the Responses API (POST
// /v1/responses): it reads a request, refusing with a 400 naming the
// field what is invalid, noting what only a provider's own Responses API
// honours (Decoded.Native), and makes it a Turn: the
// conversation it continues (previous_response_id) and its own input
// (item_references resolved), read from the store of responses, the
// Response object it echoes, and the storing of its answer
// (docs/ARCHITECTURE.md, "Responses API").
//
// The parts:
//
//	responses        Decode, Turn                    the request and its turn
//	responses/wire   Request, Response, events, Item the API's wire types
//	responses/store  Store, Memory                   the stored responses
//	responses/chat   Translate, Answer, Events       a turn served through chat completions
//	responses/native Prepare, Answer, Events         a turn served by OpenAI's or Azure's own Responses API
//
// Invariants:
//   - A stored response holds its own turn's input (item_references
//     resolved, instructions not: they are not inherited) and output, and
//     its turn holds the turn it continued; a chain expands oldest first.
//   - A store that cannot answer is a 503, never a turn served without
//     the conversation it continues; an answer the store refused says
//     store: false.
//   - Nothing here writes to a client or calls a provider.
package responses
