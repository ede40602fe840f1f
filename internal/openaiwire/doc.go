// Package openaiwire holds the OpenAI chat-completions request wire types
// that the translating adapters (anthropic, gemini) decode a client's body
// into. Adapters that pass OpenAI-family bodies through unchanged never
// decode them and do not use this package.
//
// Model: a body decodes with encoding/json into one ChatRequest; each
// adapter then reads the fields it can express upstream and translates
// them with its own rules and its own error messages. The types describe
// the wire and nothing else: no defaults, no validation, no translation.
//
// Invariants:
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
package openaiwire
