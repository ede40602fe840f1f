// Package clientkeys is what each client key may do and has done
// (docs/ARCHITECTURE.md, "Client keys and spend"): a named key's model
// allow-list, its own RPM/TPM buckets (internal/ratelimit's, charged with
// the request's token estimate and reconciled with the usage reported),
// and its counters; with shared_state (Shared) a key's buckets and spend
// are the fleet's, read and charged in one round trip at admission, and
// local at once while the shared state is down; the anonymous key (auth.api_keys_env, or no
// authentication at all) is a Key named "" that only counts.
//
// A Set owns the keys' runtimes across reloads: a key that keeps its
// name keeps its buckets while its RPM and TPM stay the same. Which key a
// request carries is internal/clientauth's to say.
//
// Invariants:
//   - A request is charged to its key once it is admitted (Admit) and
//     settled exactly once (Settle) when its answer has ended, a stream's
//     end included; a refusal charges nothing.
//   - Labels are configured names only ("" for anonymous keys), so the
//     metrics' cardinality is bounded by the config; secrets never reach
//     this package.
package clientkeys
