// Package redistest runs a real redis-server for tests: shared state is
// tested against the server operators run, never an in-memory imitation.
//
// The Debian package provides the binary (.ci/run installs it). Where it
// is missing, tests that need it are skipped with a message, unless
// REQUIRE_REDIS_SERVER=1 (set by .ci/run), which makes them fail: CI
// must never pass by skipping the shared-state tests. (Not an LLMROUTER_
// variable: the router warns of those that set no config key.)
package redistest
