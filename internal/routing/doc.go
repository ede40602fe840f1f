// Package routing is the routing state in force (docs/ARCHITECTURE.md,
// "Request path", "Reload"): the configured providers with their runtimes
// (internal/pool), the model table, the retry and score policy, the
// limits and the client keys. internal/daemon builds one Routes and hands
// it to the front door (internal/proxy) and its dialects, the admin
// listener (internal/admin) and the state-file saver (internal/warm): none
// of them imports the HTTP front door to reach the runtimes.
//
// A State is immutable; Routes holds the one in force behind an atomic
// pointer. Update validates a new configuration whole, keeps the runtime
// of every provider whose settings did not change, and swaps the State; a
// request keeps the State it started with. Parts of the front door that
// keep series per model or per provider learn of each swap (OnUpdate).
package routing
