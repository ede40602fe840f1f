// Package recent keeps the router's last requests for the status page
// (docs/ARCHITECTURE.md, "Status page"): a bounded ring of fixed-size
// records in memory, never written anywhere, never holding a prompt, an
// answer or a key (only the key's configured name).
//
// A request costs one copy of its record into the ring under a mutex, and
// nothing more while nobody watches: a watcher (the page's event stream)
// subscribes, and only then does Add wake it.
package recent
