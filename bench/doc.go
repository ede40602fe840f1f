// Command bench measures what llmrouter costs on the request path,
// side by side with the same load sent directly to the upstream, through
// nginx and through a bare net/http/httputil.ReverseProxy:
//
//	go run ./bench                          # the table (about 2 minutes)
//	go run ./bench -duration 3s -only nginx,llmrouter -concurrency 1,64
//	go run ./bench -streams 1000            # peak RSS, 1,000 streams of 20 chunks 100 ms apart at once
//	go run ./bench -router-base OLD         # OLD, a router built from an older commit, beside this one
//	go run ./bench -rounds 5 -only nginx,llmrouter -concurrency 16  # each figure the median of 5 rounds
//	go run ./bench -syscalls=false          # without perf stat's count of syscalls and context switches
//	go run ./bench -upstream tls            # the upstream speaks HTTPS, HTTP/2 when offered
//	go run ./bench -only llmrouter,llmrouter+tracing  # what tracing costs llmrouter
//
// Model: every party is its own process on loopback. The bench binary
// re-executes itself for the fake upstream (-role upstream, package
// internal/upstream) and for the bare proxy (-role httputil); nginx runs
// from a config written to a temporary directory; llmrouter is built from
// this module as the Dockerfile builds the image's binary (static:
// CGO_ENABLED=0, -trimpath, -ldflags='-s -w'; targets.ShipFlags), or taken
// from -router PATH, and pointed at the upstream through one
// openai_compatible provider with every protection at its default
// (breaker, learned RPM/TPM buckets, adaptive throttling, retries); they
// are started by internal/targets. The load generator (internal/load) is
// in the bench process itself: closed-loop workers, each sending its next
// request as soon as the previous answer was read to the end, over a
// keep-alive HTTP/1.1 client.
//
// llmrouter+tracing (asked for by name in -only; not in the default set)
// is a second llmrouter configured as the first plus a tracing: block at
// -tracing-ratio, measured right beside it in every (mode, concurrency), so
// the difference between the two rows is what tracing costs. It exports
// over OTLP/HTTP to the bench's trace sink (internal/collector), the bench
// re-executed with -role collector: its own process, so taking the spans
// is counted neither in the router's CPU nor in the upstream's. Around
// each traced row the bench reads the sink's counts (exports, bytes,
// spans) and the router's llmrouter_tracing_spans_{exported,dropped}_total
// from its admin /metrics, outside the CPU readings; at the end it waits
// until the sink has been quiet for one OTEL_BSP_SCHEDULE_DELAY and
// prints the totals, so one can see whether spans were dropped.
//
// The upstream has one listener per target and counts the TCP connections
// each accepts (and the protocol of each, h1 or h2), served on a separate
// plain control port; the bench reads them around each run. With -upstream
// tls it serves HTTPS from a CA generated into the temporary directory,
// offering h2 then http/1.1 (ALPN); each proxy is told to trust that CA.
//
// llmrouter-base (-router-base PATH) is a second router binary, built
// from an older commit, configured as llmrouter and measured right beside
// it in every (mode, concurrency) and in -streams: before and after in
// one run.
//
// With -streams N, N closed-loop workers each send streams of
// -stream-chunks chunks -stream-interval apart back to back, so N are open
// at once; the proxy's peak RSS is its VmHWM, reset when they start.
//
// For each (mode, concurrency, target) the bench warms up, reads the CPU
// time (utime+stime in /proc/PID/stat) of every process in the target's
// process group, drives the load for -duration, reads CPU again and VmRSS
// (/proc/PID/status) (internal/proc). CPU per request is the difference
// divided by the requests completed; for nginx the group is the master and
// its workers. With -syscalls, perf stat counts the group's system calls
// and context switches over the same period and, where perf can read
// those tracepoints, the nanosleep and futex calls among them: the Go
// runtime's scheduler sleeping (sysmon) and parking idle threads.
//
// -rounds N measures every (mode, concurrency) N times, the targets in
// table order in rounds 0, 2, ... and in reverse order in rounds 1, 3,
// ..., so that a drift of the shared machine during the run reaches every
// target alike. Each figure of the tables is the median over the rounds
// (errors: the sum); the summary's CPU ratios are ratios of medians,
// followed by each round's ratio (both targets measured in that round)
// and the median of those. On a 2-vCPU VM shared with other work, one
// router binary's CPU/request moved 20-40% between single runs minutes
// apart, nginx's too: one pass cannot tell a 10% change from that.
//
// Invariants: only 127.0.0.1 addresses; every child runs in its own
// process group, dies with the bench (Pdeathsig) and is stopped (SIGTERM,
// then SIGKILL after a grace period) when the bench returns, fails or is
// interrupted; every loop and wait is bounded by a deadline.
package main
