// Package anthropic is the adapter for Anthropic's native Messages API
// (POST /v1/messages). Clients speak OpenAI chat completions to the router;
// this adapter translates each request into a Messages request, and each
// answer (a whole message or its event stream) back into OpenAI
// chat.completion JSON or chat.completion.chunk payloads.
//
// Model:
//
//	OpenAI request ──translate──► Messages request ──► api.anthropic.com
//	OpenAI JSON    ◄──convert──── message JSON      ◄──┘ (non-stream)
//	OpenAI chunks  ◄──Stream.Next── SSE events      ◄──┘ (stream)
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
//   - A stream's chunks all carry the same id, created and model; the first
//     says role "assistant"; tool calls are numbered by a running counter
//     (OpenAI's index), not by Anthropic's content block index; its usage is
//     input from message_start and output from the last message_delta
//     (Anthropic's counts there are cumulative, never summed).
//   - Rate-limit headers become an outcome.RateLimit on every answer that
//     has them (ParseRateLimit); counts below zero mean unknown.
//
// The stream parses each event with gjson over the SSE reader's own buffer
// (after validating it), fills in one openaiwire.ChatCompletionChunk it
// reuses, whose strings point into the event, and encodes it with the
// openaiwire.Encoder it keeps for its life before the next event is read:
// text is decoded and encoded again, but an event allocates nothing.
package anthropic
