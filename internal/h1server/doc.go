// Package h1server is the API listener's HTTP/1.1 server: one goroutine
// per connection reads a request, runs the handler in that goroutine,
// writes the answer and loops (keep-alive, pipelined requests in order).
// net/http's server costs more per request than the router around it
// (docs/ARCHITECTURE.md, "The API listener"): a background reader
// goroutine per request, a head parsed into fresh maps and strings, the
// answer's head written from a deep stack in a separate write. Here:
//
//   - no goroutine per request: a client that hangs up while its request
//     is served is noticed by one epoll watcher per server (watch_linux.go),
//     registered once per connection, and its request's context is
//     cancelled, as net/http's background read does;
//   - a request's head is read into the connection's buffer and made one
//     string: method, URI, header keys (canonicalised in place) and values
//     are its substrings, the values in one backing array;
//   - the status line, headers and the first body bytes go out in one
//     write when the handler flushes, fills the 4 KiB buffer or returns
//     (Content-Length when it returned, chunked otherwise).
//
// It keeps net/http's contract where handlers see it: http.Request as
// net/http builds it, http.Flusher, http.Hijacker (the bytes already read
// travel with the hijacked connection), http.ResponseController's Flush,
// SetReadDeadline and SetWriteDeadline, Expect: 100-continue answered at
// the body's first read, a body the handler left unread drained up to
// 256 KiB before the answer (else the connection closes), Connection:
// close either way, HTTP/1.0 keep-alive, Date and sniffed Content-Type,
// panics logged and the connection closed, Shutdown draining in-flight
// requests and calling RegisterOnShutdown's hooks.
//
// It is stricter than net/http where requests are smuggled: a line not
// ended by CRLF, a folded header, Content-Length beside
// Transfer-Encoding, more than one Content-Length, Transfer-Encoding on
// HTTP/1.0 or other than one "chunked", a chunked body's trailers, a
// version other than 1.0 and 1.1 (HTTP/2's preface: 505), CONNECT, more
// than 256 header lines. FuzzParse holds the parser to net/http's: the
// same bytes give the same request, or a refusal here.
//
// Only the request path is served: no TLS, no HTTP/2.
package h1server
