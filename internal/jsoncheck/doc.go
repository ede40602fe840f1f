// Package jsoncheck validates an untrusted JSON document in one bounded
// pass: syntax (RFC 8259), UTF-8, a nesting limit, and duplicate keys of
// the top-level object.
//
// It exists because the request path must never let input drive
// unbounded work: recursive validators (gjson.Valid among them) use one
// stack frame per nesting level, so a body of six million '[' overflows
// the goroutine stack, which Go cannot recover from, and takes the whole
// process down. Check keeps an explicit stack of at most MaxDepth bytes
// on its own frame, allocates only when the top-level object has more
// than a few dozen keys, and stops at the first problem.
//
// Duplicate top-level keys are refused because the router reads and
// rewrites top-level fields ("model", "stream") while a provider may keep
// another occurrence: {"model":"cheap","model":"expensive"} must not be
// routed as one model and served as the other. Keys are compared after
// unescaping, so "mod\u0065l" is "model". Keys of nested objects are not
// compared.
package jsoncheck
