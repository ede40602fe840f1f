// Package h1 is the upstream HTTP/1.1 client for plain-http providers
// (local models: Ollama, vLLM, llama.cpp): an http.RoundTripper that writes
// each request and reads its answer in the calling goroutine, over a pool
// of keep-alive connections. net/http's Transport runs two goroutines per
// connection and hands every request and answer between them; here there
// are none, which is most of what a proxied request costs on a sidecar
// (docs/ARCHITECTURE.md, "Upstream connections").
//
// The answer's head is parsed here (answer.go), into one string per head:
// header names canonicalised in place, the fields indexed (Fields: offsets
// into the head), the Response, the index, its framing reader and the
// pooled body in one allocation. RoundTrip makes the http.Header from the
// index; RoundTripFields makes none, for callers that read the few fields
// they need one by one (Fields.Get). Its framing (Content-Length, chunked
// through httputil's chunked reader, to the connection's end, none for
// HEAD, 1xx, 204 and 304) is decided as net/http's transfer.go decides it,
// and FuzzReadAnswer holds it to http.ReadResponse on the same bytes: the
// same answer, or a refusal of a head RFC 9112 calls malformed (obs-fold,
// a space before the colon, Content-Length beside Transfer-Encoding; the
// list is readAnswer's). Heads, 1xx ones included, are bounded to 1 MiB.
// The package also owns the connection's life: when it is reused, when it
// is closed, and cancellation (the request's context puts a past deadline
// on the connection).
//
// https:// providers keep net/http's Transport, for TLS and HTTP/2.
package h1
