// Package openaiwire holds the OpenAI wire types: the chat-completions
// request that the translating adapters (anthropic, gemini) decode a
// client's body into, and the answers the router writes back in OpenAI's
// shape (chat completions and their stream chunks, legacy completions,
// embeddings, models, error bodies). Adapters that pass OpenAI-family
// bodies through unchanged never decode them and do not use the request
// types.
//
// Model: a request body decodes with encoding/json into one ChatRequest;
// each adapter then reads the fields it can express upstream and
// translates them with its own rules and its own error messages. An
// answer is filled in as a value of the response types and encoded with
// Append, or, one chunk per upstream event, with an Encoder a stream keeps
// for its life. The types describe the wire and nothing else: no
// defaults, no validation, no translation.
//
// Invariants of the request types:
//   - Only fields that some adapter reads are declared; everything else in
//     the body is ignored by the decoder. A declared field of the wrong
//     JSON type is a decoding error (*json.UnmarshalTypeError) for every
//     adapter, even one that does not read the field.
//   - Fields whose JSON type varies on the wire and that adapters parse
//     themselves (tool_choice, stop) are kept raw.
//   - A message's Content never fails to decode: a content that is not a
//     string, an array of parts or null is recorded in Content.Err, so that
//     each adapter refuses it when its own rules say (Anthropic before it
//     reads anything else, Gemini when it reaches that message).
//   - Pointers and raw values are nil when the field is absent or null.
//
// Invariants of the response types:
//   - Only fields that some writer sends are declared, with OpenAI's names.
//     A key OpenAI always sends is never omitted; one it sends only
//     sometimes has omitempty, and its zero value (nil, "") leaves it out.
//   - A JSON null is a nil pointer (or, for Error's Param and Code, "").
//   - Append and Encoder write one line without HTML escaping, so a
//     payload can go into an SSE data field as it is.
package openaiwire
