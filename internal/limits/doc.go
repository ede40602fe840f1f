// Package limits is the `limits:` block (docs/ARCHITECTURE.md, "Memory",
// "Hostile clients"): what one client, or many at once, may cost the
// router (body sizes and the memory all bodies hold, read and write
// timeouts, connections, the whole request's deadline), its defaults and
// its validation. The body reader, the front door and the daemon each read
// their part of it.
package limits
