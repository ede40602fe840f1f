// Package chat serves a Responses API turn through chat completions, so
// that every provider type can: the turn's conversation becomes one chat
// completions request (which the proxy sends like any other, through the
// adapters' own translation), and the provider's chat answer or chat
// stream becomes the Response object or the Responses event sequence
// (docs/ARCHITECTURE.md, "Responses API").
//
// Model:
//
//	Translate(turn)     the conversation (the chain's items, then this
//	                    turn's) as chat messages: instructions first,
//	                    function calls joined to their assistant turn,
//	                    each function output right after its call
//	Answer(chat)        chat completion → Response JSON, stored
//	Events()            chat chunks → typed events, stored at the end
//
// Invariants:
//   - A provider's tool call id is kept as call_id, the pairing key of a
//     function call's output; item ids are minted with OpenAI's prefixes.
//   - A response is stored before its last byte is written, so a client
//     can continue it the moment it has it.
//   - Nothing here writes to a client or calls a provider.
package chat
