// Package gemini is the adapter for Google's native Gemini API
// (generativelanguage.googleapis.com). It speaks OpenAI to the proxy and
// Gemini to the provider:
//
//	OpenAI chat.completions ──► POST {base}/{ver}/models/{m}:generateContent
//	                            POST {base}/{ver}/models/{m}:streamGenerateContent?alt=sse
//	OpenAI embeddings       ──► POST {base}/{ver}/models/{m}:batchEmbedContents
//	Gemini API (OpGemini)   ──► the same generateContent calls, the client's
//	                            body as sent (NativeBody), the answer and the
//	                            events' payloads passed back as they came
//	probe                   ──► GET  {base}/{ver}/models?pageSize=1
//
// Model. A request is translated before anything is sent: the client's
// body is decoded into small structs, and whatever cannot be expressed in
// Gemini (an unknown role or content part, a tool message answering no
// earlier call, token-array embedding input, malformed JSON) is an
// outcome.ClientError with status 400 that never reaches the network. The
// answer is translated back into OpenAI bytes: a whole chat.completion
// document, or one chat.completion.chunk payload per Gemini SSE event.
//
// Invariants.
//   - Every failure is classified here, once, into an *outcome.Error:
//     HTTP errors by ClassifyError (the google.rpc.Status body, object or
//     array-wrapped), transport errors by provider.TransportError (so a
//     cancelled context keeps its cause), error events inside a stream by
//     ClassifyError as well.
//   - Gemini's stream has no terminator: a body that ends after an event
//     carrying a finishReason is a whole answer (io.EOF); a body that ends
//     before one is a cut (outcome.Network), never a short answer.
//   - Gemini sends no rate-limit headers, so Response.RateLimit is always
//     outcome.UnknownRateLimit; the only wait it names is the RetryInfo in
//     a 429 body, which lands in outcome.Error.RetryAfter. A per-day quota
//     (a quotaId containing "PerDay") is outcome.Quota with a wait until the
//     next midnight in America/Los_Angeles, when Google resets daily quotas.
//   - The client's body is never modified; the same bytes serve every retry.
//   - The adapter starts no goroutine that outlives a call: a stream
//     request's chat decode runs on one of its own, which Do waits for
//     (openaiwire.Decode: the request's goroutine keeps the stack it
//     grows to for the stream's life). A Stream holds the response body
//     until Close; it is not safe for concurrent use.
//   - A stream's events are read with jsonscan as gjson read them
//     (scan.go; FuzzReadsAsGjson), with no float parse of a plain
//     integer and no nested closures: a waiting stream's goroutine stays
//     at 8 KiB of stack.
package gemini
