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
// Every goroutine it starts (the listeners, the state saver, the config
// watcher) ends in Shutdown.
package daemon
