// Package responses is the Responses API (POST /v1/responses) on top of
// chat completions: a request is translated onto a chat completions
// request, which the proxy sends like any other (so every provider type
// serves it, through the adapters' own chat translation), and the chat
// answer or chat stream is translated back into a Response object or the
// Responses event sequence. The Store keeps finished responses for GET,
// DELETE, previous_response_id and item_reference
// (docs/ARCHITECTURE.md, "Responses API"; the wire facts and what each
// client needs are in the comments of the types).
//
// Model:
//
//	Decode(body)          typed request; what the router cannot honour
//	                      (built-in tools, background, conversations,
//	                      unknown item types…) is a 400 naming the field
//	NewTurn(d, store)     previous_response_id and item_references resolved;
//	                      the conversation (the chain's items, then this
//	                      turn's) becomes chat messages: instructions first,
//	                      function calls joined to their assistant turn,
//	                      each function output right after its call
//	Turn.Answer(chat)     chat completion → Response JSON, stored
//	Turn.Events()         chat chunks → typed events, stored at the end
//
// Invariants:
//   - A stored response holds its own turn's input (item_references
//     resolved, instructions not: they are not inherited) and output, and
//     points to the response it continued; a chain expands oldest first.
//   - Minted ids carry OpenAI's prefixes (resp_, msg_, fc_); a provider's
//     tool call id is kept as call_id, the pairing key of a function
//     call's output.
//   - A response is stored before its last byte is written, so a client
//     can continue it the moment it has it.
//   - Nothing here writes to a client or calls a provider.
package responses
