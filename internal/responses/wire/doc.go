// Package wire holds the Responses API's wire types (POST /v1/responses
// and the routes beside it): the request fields the router reads, the
// Response object, its output items and content parts, the stream's
// events, and the conversation Item the router keeps between turns
// (docs/ARCHITECTURE.md, "Responses API"; the wire facts and what each
// client needs are in the comments of the types).
//
// Invariants:
//   - A key OpenAI always sends is never omitted: empty arrays encode as
//     [], absent objects as null.
//   - Minted ids carry OpenAI's prefixes (resp_, msg_, fc_) and 48 random
//     hex digits: unguessable, and accepted by OpenAI when a client sends
//     them on to it.
//   - No event but ErrorEvent has a top-level "error" key: openai-go ends
//     a stream on one, even "error": null.
package wire
