// Package record is a provider's record in the state file
// (docs/ARCHITECTURE.md, "Warm restart"): what a provider's runtime keeps
// across a restart (State: each mechanism's own exported state, the quota
// block, the disabled targets, the last error kind, the slow-start ramp),
// and the Fingerprint of the configuration it was learned under.
//
// Model: upstream.Upstream's Export writes a State and its Restore reads
// one; the document around the records (its version, who saved it and
// when) is internal/warm's, written atomically by internal/statefile.
//
// Invariants:
//   - Instants are wall-clock: a monotonic reading means nothing to
//     another process. Each mechanism converts its own deadlines.
//   - A State restores only onto a provider whose Fingerprint is the same
//     (type, base_url, key source, rpm, tpm, breaker policy). base_url,
//     the key source and the policy are kept as hashes (a URL may carry
//     credentials); no key ever enters the file.
//   - The same Fingerprint, with the provider's name, names the
//     provider's state in a fleet's Redis (Key), so replicas share a
//     provider only when they agree on what it is.
//   - Version 1 of the file held Stats, RequestsLimit and TokensLimit
//     only; every other field is zero in a State read from it.
package record
