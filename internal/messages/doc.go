// Package messages is the front of Anthropic's Messages API (POST
// /v1/messages and /v1/messages/count_tokens): it checks a request as
// Anthropic checks it and reads what the router needs from it
// (docs/ARCHITECTURE.md, "Anthropic Messages API").
//
// Model:
//
//	Decode(body)              the request checked, its model, stream,
//	                          max_tokens and metadata.user_id read
//	DecodeCount(body)         the same for count_tokens (no max_tokens,
//	                          no stream)
//	EstimateInputTokens(body) the router's own count, for targets that
//	                          cannot count
//
// Invariants:
//   - Decode's walk is also the body's bounded check (syntax, UTF-8,
//     depth, distinct top-level keys: jsonscan's checked walk): a body
//     the check refuses is refused, and the caller asks the check why
//     (its answer comes before the request's own problems). Decode never
//     panics on any input.
//   - A refusal is an *Error in Anthropic's terms: 400
//     invalid_request_error and a message naming the field path the way
//     Anthropic's own validation does ("max_tokens: Field required").
//   - Only what Anthropic documents is checked, and only its shape: an
//     unknown top-level field or content block type is accepted (a
//     native target receives it as sent; a translation drops it, keeping
//     its text), since new ones arrive with every beta.
//   - Decode reads the body without copying it, in one walk
//     (internal/jsonscan) that also counts EstimateInputTokens;
//     the strings of a Request do not alias the body.
//   - Nothing here writes to a client or calls a provider.
package messages
