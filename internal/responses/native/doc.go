// Package native serves a Responses API turn through a provider's own
// Responses API (OpenAI's /v1/responses, Azure's /openai/v1/responses):
// what only that API honours (built-in tools, background, conversations,
// input items chat has no equivalent for…) is sent there as the client
// wrote it, with the target's model (docs/ARCHITECTURE.md, "Responses
// API").
//
// Model:
//
//	Prepare(turn, body)  the client's body; when the router holds the
//	                     previous_response_id (or item_references), the
//	                     conversation they stand for is written into
//	                     input instead, so it works whichever provider
//	                     served the earlier turns
//	Answer(body)         the provider's Response, stored in the router's
//	                     store too, previous_response_id echoed as sent
//	Events()             the provider's events, relayed one by one with
//	                     their event names, the response stored before the
//	                     terminal event is written
//
// Invariants:
//   - Everything the router does not rewrite reaches the provider and
//     the client byte for byte: the request's other fields, the answer,
//     each event.
//   - Items the router holds go to the provider without the ids it
//     minted; items it keeps as sent (reasoning, built-in tools' calls)
//     go as sent, but a reasoning item without encrypted content, which
//     only the provider that made it can resolve, is left out.
//   - Nothing here writes to a client or calls a provider.
package native
