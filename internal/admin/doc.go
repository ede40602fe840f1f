// Package admin serves the admin listener (docs/ARCHITECTURE.md, "HTTP
// surface"): GET /metrics (the router's registry), GET /healthz (the
// process is alive), GET /readyz (503 once draining; never failed by
// providers being down), GET /admin/providers (one row per provider, in
// config order), POST /admin/providers/{name}/enable (an operator's word
// that a provider's quota is back or its models exist: Enable), and Go's
// profiler at /debug/pprof/ when pprof is on.
//
// It reads the routing state in force (internal/routing's View) and changes nothing
// else: the rows are the providers' runtimes' own (upstream.Status) with
// their scores, Enable lifts what a runtime blocked, and the gauges read at
// scrape time (Register: llmrouter_provider_score, llmrouter_system_health)
// are the same scores and the share of providers not open.
package admin
