// Package sse reads and writes Server-Sent Events (the WHATWG HTML
// "event stream" format) as the LLM APIs use them: every event is a block
// of "field: value" lines ended by a blank line; "data" lines of one event
// join with "\n"; lines beginning with ":" are comments (keep-alives); LF
// and CRLF end a line. (The standard also allows a bare CR; no LLM API sends
// one, and the reader keeps it as part of the line.)
//
// The Reader hands out slices of its own buffer, valid until the next
// call, so a relay copies nothing it does not have to. An event larger than
// the Reader's limit is an error, never an unbounded allocation.
package sse
