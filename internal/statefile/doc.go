// Package statefile saves and loads a JSON document atomically: the new
// content is written to a temporary file beside the target, synced, and
// renamed over it, so a crash leaves either the old file or the new one,
// never a torn one. Loading a missing, unreadable or corrupt file is an
// error the caller logs before starting fresh.
package statefile
