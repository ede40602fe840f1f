// Package simulated is an in-process provider: it answers OpenAI-shaped
// requests itself, after a configured latency, failing at a configured rate
// with a configured status. The embedded default config routes to it so
// the router answers with no keys and no network; tests and benchmarks use
// it as a provider whose behaviour they choose.
//
// It has no goroutines: a stream produces its next chunk when asked, after
// waiting on a timer that the request's context can interrupt. Failures
// are classified exactly as a real adapter would classify the same status.
package simulated
