// Package h1 is the upstream HTTP/1.1 client for plain-http providers
// (local models: Ollama, vLLM, llama.cpp): an http.RoundTripper that writes
// each request and reads its answer in the calling goroutine, over a pool
// of keep-alive connections. net/http's Transport runs two goroutines per
// connection and hands every request and answer between them; here there
// are none, which is most of what a proxied request costs on a sidecar
// (docs/ARCHITECTURE.md, "Upstream connections").
//
// The answer's head and framing are parsed by net/http itself
// (http.ReadResponse); this package owns only the connection's life: when
// it is reused, when it is closed, and cancellation (the request's context
// puts a past deadline on the connection).
//
// https:// providers keep net/http's Transport, for TLS and HTTP/2.
package h1
