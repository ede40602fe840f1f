// Package admin serves the admin listener (docs/ARCHITECTURE.md, "HTTP
// surface"): GET /metrics (the router's registry), GET /healthz (the
// process is alive), GET /readyz (503 once draining; never failed by
// providers being down), GET /admin/providers (one row per provider, in
// config order), GET /admin/keys, GET /admin/models, GET /admin/state (the
// three at one moment), GET /admin/recent (the ring of recent requests),
// GET /admin/config (the routing table and the last reloads), POST
// /admin/providers/{name}/enable (an operator's word that a provider's
// quota is back or its models exist: Enable), and Go's profiler at
// /debug/pprof/ when pprof is on.
//
// The status page ("Status page") is three embedded files at /, /app.js
// and /style.css, fed by GET /admin/events: server-sent events, a state
// event every second and requests events with the ring's new records,
// coalesced. A stream is its request's goroutine and nothing else: no
// work without a subscriber, at most maxSubscribers of them, each write
// bounded, and it ends when its client leaves or the server shuts down
// (the request's context; the daemon ends its server's BaseContext at
// Shutdown).
//
// It reads the routing state in force (internal/routing's View) and changes nothing
// else: the rows are the providers' runtimes' own (upstream.Status) with
// their scores, Enable lifts what a runtime blocked, and the gauges read at
// scrape time (Register: llmrouter_provider_score, llmrouter_system_health)
// are the same scores and the share of providers not open. Every route but
// the probes and the scrape is behind the guard (guard.go).
package admin
