// Package warm is the state file's document (docs/ARCHITECTURE.md, "Warm
// restart"): what the router has learned about its providers (stats,
// learned limits, the breaker, the buckets and their blocks, the adaptive
// throttle's window, the quota block, the disabled targets: one
// internal/warm/record State per provider), exported from the front
// door's providers (internal/proxy's View) and restored into them before
// the router serves.
//
// The document is versioned. This router writes version 2 and reads 1 and
// 2; a newer version, or none, is refused as such (ErrVersion) rather than
// misread. A provider whose configuration changed since the save starts
// fresh (its runtime says why), and a disabled target that is no longer one
// of the provider's targets stays enabled. Saving and loading the file
// atomically is internal/statefile's job; when to save, the daemon's.
package warm
