// Package chat serves an Anthropic Messages request through OpenAI chat
// completions, so that every provider type can: the request becomes one
// chat completions request (which the proxy sends like any other,
// through the adapters' own translation), and the provider's chat answer
// or chat stream becomes the Messages answer or the Messages event
// sequence (docs/ARCHITECTURE.md, "Anthropic Messages API").
//
// Model:
//
//	Translate(body, req)  system first, then each turn: a user turn's
//	                      tool results as "tool" messages (right after
//	                      the assistant turn that called them), then its
//	                      text and images; an assistant turn's text and
//	                      its tool_use blocks as tool_calls
//	Answer(chat)          chat.completion → message
//	Events()              chat.completion.chunk… → message_start,
//	                      content_block_start/delta/stop per block,
//	                      message_delta, message_stop
//
// Invariants:
//   - What chat completions cannot carry is dropped without an error:
//     thinking, cache_control, server tools, top_k, context_management,
//     output_config and the like; a block of an unknown type keeps its
//     text.
//   - The answer's model is the model the client asked for, whichever
//     target served it; a tool call's id is made a valid tool_use id.
//   - Every JSON document written is valid whatever the client or the
//     provider sent: strings go through openaiwire's escaper, or are
//     copied as written when they are what it would write
//     (openaiwire.Canonical); raw values are copied only once checked.
//   - JSON is read as gjson reads it (the first of a repeated field,
//     every element; a stream chunk's last "choices", every "usage"), by
//     walks over its text that decode only what they write. A request's
//     containers are walked where they stand (a turn, its blocks, a
//     block's source, a tool), not stepped over and walked again.
//   - Nothing here writes to a client or calls a provider.
package chat
