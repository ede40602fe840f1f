// Package responses is the front of the Responses API (POST
// /v1/responses): it reads a request (Decode), refusing with a 400 naming
// the field what is invalid, and noting what only a provider's own
// Responses API honours (Decoded.Native: a forced built-in tool,
// background…), which the 400 is for a model without an openai or azure
// target (docs/ARCHITECTURE.md, "Responses API"). Every request goes
// natively to openai and azure targets; the rest is translated, declared
// built-in tools left out, namespace and custom tools as functions
// (Decoded.Functions).
//
// The parts:
//
//	responses        Decode, Error                   the request, checked
//	responses/wire   Request, Response, events, Item the API's wire types
//	responses/store  Store, Memory                   the stored responses
//	responses/turn   New, Keep, InputItems           the turn: its conversation from the store, its Response, its storing
//	responses/chat   Translate, Answer, Events       a turn served through chat completions
//	responses/native Prepare, Answer, Events         a turn served by OpenAI's or Azure's own Responses API
//
// Invariants:
//   - Decode reads the whole request or refuses it; a request that needs
//     a native Responses API is still checked whole. It reads the body in
//     one checked walk (jsonscan.Doc) that is also the bounded body check,
//     with encoding/json's semantics (keys under any case, the last of a
//     repeated key, the first wrong value's refusal); decode.golden holds
//     what it reads.
//   - Items chat completions cannot take are kept as sent (wire.Item.Raw),
//     never dropped at decoding.
//   - Nothing here writes to a client or calls a provider.
package responses
