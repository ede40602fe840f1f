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
// Responses API's, internal/responses/chat). Rescued is either, whose
// after-commit failure is first offered to a Rescuer (the attempt loop's
// served attempt): while one could continue the stream, the relay keeps a
// transcript of what the client was sent (its text, and whether it is
// free text: one choice, no tool call, not inside a thinking block, not
// finished), and a continuation it is given is spliced into the same
// client stream (its opening dropped, the whitespace the prefix lost not
// repeated, a Messages stream's block indexes following the client's), so
// the client reads one answer with one ending.
package relay
