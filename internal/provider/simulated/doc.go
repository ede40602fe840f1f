// Package simulated is an in-process provider: it answers OpenAI-shaped
// requests itself, after a configured latency, failing at a configured rate
// with a configured status. The embedded default config routes to it so
// the router answers with no keys and no network; tests and benchmarks use
// it as a provider whose behaviour they choose.
//
// It behaves like a model that always follows its instructions, so that
// every client feature works against the embedded default (issue 14, item
// 5):
//   - chat: text that echoes the user's last message (or the configured
//     reply); a tool call when tool_choice asks for one, with arguments
//     generated from the tool's JSON Schema; text that reports a tool's
//     result when the last message is one; JSON generated from a
//     response_format json_schema, or an object for json_object. See
//     chatAnswer for the rules and schemaValue for the schemas it reads.
//   - streams carry the same answer as the whole one: prose word by word,
//     JSON (arguments, structured answers) in fragments, a tool call as
//     OpenAI streams it (id and name first, then the arguments), then the
//     finish chunk and, when asked, the usage chunk.
//   - embeddings: unit vectors derived from the input, of the requested
//     dimensions, as numbers or base64 float32s.
//   - usage on every answer: prompt tokens estimated from the body's
//     length, completion tokens counted from the answer, equal whole and
//     streamed.
//
// Everything but ids and timestamps is a function of the request and the
// config: no randomness apart from failure_rate, no network. What OpenAI
// would refuse (an unknown tool_choice, a function tools does not
// declare, dimensions out of range) is a 400 client error naming the
// field.
//
// It has no goroutines: a stream produces its next chunk when asked, after
// waiting on a timer that the request's context can interrupt. Failures
// are classified exactly as a real adapter would classify the same status.
package simulated
