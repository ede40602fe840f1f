// Package relay carries a provider's chat stream to an HTTP client
// (docs/ARCHITECTURE.md, "Streaming").
//
// Preamble reads a stream up to its first chunk with content, so that
// nothing reaches the client before the provider has shown it can answer:
// a stream that dies before its first token can still fail over. Stream
// then commits (the first byte written is the commit point) and relays
// every chunk as it arrives, flushing events that arrived together at
// once, cutting a client that stops reading after the write timeout, and
// ending a stream the provider broke after the commit with one error event
// and no [DONE]. Translate is the same relay with a Framer writing the
// chunks, the end and an after-commit failure as another API's events (the
// Responses API's, internal/responses/chat).
package relay
