// Package apierror is the router's own error value (docs/ARCHITECTURE.md,
// "HTTP surface"): the status, the OpenAI error fields a front door writes
// in its own shape, Retry-After, and whether the answer must end the
// connection. It is a leaf, so that the body reader, the decoders and the
// dialects refuse a request without importing the answer writer
// (internal/answer) or anything above it.
package apierror
