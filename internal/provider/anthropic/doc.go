// Package anthropic is the adapter for Anthropic's native Messages API
// (POST /v1/messages). It serves two operations (docs/ARCHITECTURE.md,
// "Providers"). Clients speaking OpenAI chat completions to the router
// (provider.OpChat) are translated: each request into a Messages request,
// and each answer (a whole message or its event stream) back into OpenAI
// chat.completion JSON or chat.completion.chunk payloads. Clients speaking
// the Messages API itself (provider.OpMessages) go natively: the body is
// passed with only the model swapped, so unknown fields and content
// blocks, cache_control, thinking blocks and their signatures arrive byte
// for byte; the client's anthropic-version and anthropic-beta are
// forwarded verbatim; the answer comes back as it came.
//
// Model:
//
//	translated (OpChat)
//	OpenAI request ──translate──► Messages request ──► api.anthropic.com
//	OpenAI JSON    ◄──convert──── message JSON      ◄──┘ (non-stream)
//	OpenAI chunks  ◄──Stream.Next── SSE events      ◄──┘ (stream)
//
//	native (OpMessages)
//	Messages request ──model swapped──► Messages request ──► api.anthropic.com
//	message JSON     ◄──as received────────────────────────┘ (non-stream)
//	event payloads   ◄──nativeStream.Next── SSE events ◄───┘ (stream)
//	error body       ◄──as received, in outcome.Error.Body─┘ (any error answer)
//
// CountTokens (provider.TokenCounter) sends a native count_tokens body the
// same way to /v1/messages/count_tokens.
//
// Invariants:
//   - A request the adapter cannot translate (messages missing, wrong
//     types, n > 1, tool arguments that are not a JSON object, unsupported
//     content parts) fails with an outcome.ClientError of status 400 and
//     never reaches the network.
//   - Every failure is classified here, once: an HTTP error by ClassifyError
//     (Anthropic's error.type first, the status second), an error event in
//     a stream by its error.type, a cut connection or a stream that ends
//     before message_stop by provider.TransportError (outcome.Network, or
//     the context's cause when the context ended).
//   - A translated stream's chunks all carry the same id, created and model; the first
//     says role "assistant"; tool calls are numbered by a running counter
//     (OpenAI's index), not by Anthropic's content block index; its usage is
//     input from message_start and output from the last message_delta
//     (Anthropic's counts there are cumulative, never summed).
//   - Rate-limit headers become an outcome.RateLimit on every answer that
//     has them (ParseRateLimit); counts below zero mean unknown. Token
//     counting is limited apart from message creation: its answers carry
//     none.
//   - Native: the upstream body is the client's with only the model value
//     replaced, and a max_tokens above the target's cap lowered to it
//     (provider.Request.AppendBody); translated, max_tokens is the
//     client's limit or default_max_tokens, lowered to the cap alike; the key is the provider's,
//     never the client's; a beta is never filtered. A 200's body, and an
//     error answer's (bounded by provider.MaxErrorBody, in
//     outcome.Error.Body), are the provider's bytes, checked as JSON only
//     where a 200 is read. A native stream yields each event's data
//     unchanged, pings and unknown types included, ends with io.EOF only
//     after message_stop's payload, and reads just the type and usage.
//   - Usage is input from message_start (or the message) plus its cache
//     reads and writes, which outcome.Usage also reports apart, and output
//     from the last message_delta, on both paths.
//
// The translating stream parses each event with gjson over the SSE
// reader's own buffer (after validating it), fills in one
// openaiwire.ChatCompletionChunk it reuses, whose strings point into the
// event, and encodes it with the openaiwire.Encoder it keeps for its life
// before the next event is read: text is decoded and encoded again, but an
// event allocates nothing. The native stream reads the same buffer and
// returns it: an event allocates nothing either, and is copied only into
// an error's Body.
package anthropic
