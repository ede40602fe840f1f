// Package providertest holds the test helpers the provider adapters'
// tests share: a semantic JSON comparison, a typed errors.As that fails
// the test, a fake upstream on net/http/httptest that records every
// request it receives, a handler that answers with a fixed status,
// header and body, and the table of output limits a capped target's
// adapter must send (OutputLimits) with its check.
//
// Model: helpers take a testing.TB, call its Helper, and fail it the way
// the tests they replace did: Fatal when nothing further can be checked
// (invalid JSON, no error of the wanted type, a missing request), Errorf
// for a mismatch so that a table goes on. The package depends on the
// standard library and the outcome leaf only, never on an adapter, so any
// adapter's tests can import it without a cycle. CheckClassified,
// CheckEnd and CheckChunk are the contracts the adapters' fuzz targets
// hold every classified error and emitted chunk to.
//
// Invariants:
//   - An Upstream records a request (method, path, raw query, a clone of
//     the header, the whole body) before its handler sees it, under a
//     mutex, so the test reads what was sent even when the handler fails
//     or the client gives up; it closes with the test (tb.Cleanup).
//   - Nothing here sleeps or starts a goroutine that outlives the test.
package providertest
