// Package daemon is one running router, from a loaded config to its exit
// (docs/ARCHITECTURE.md, "Packages", "Configuration"): it builds the
// providers' adapters (from the types the binary serves), the front door
// (internal/proxy), the Responses API (internal/responses/api) and, with
// shared_state, the fleet; it serves the API and admin listeners, restores
// and saves the state file ("Warm restart"), reloads on SIGHUP or a change
// of the config file, and drains at shutdown.
//
// Build and Check are what `router validate` runs: the same functions as
// Start, so that whatever serve rejects, validate rejects with the same
// message. A reload that fails leaves the running config in force.
//
// The daemon is an ordered list of components (group.go), started in order
// and stopped in reverse, by Shutdown or by a start that fails part-way:
// cleanup is written once. Every goroutine it starts (the listeners, the
// state saver, the config watcher) belongs to a component and ends when it
// stops.
package daemon
