// Package outcome is the shared vocabulary of what happened to one attempt:
// the kind of failure (classified once, in the adapter), the typed error that
// carries it, the rate-limit facts a provider announced, and token usage.
//
// Every other package reads these values; none of them re-classifies. The
// adapter is the only place that knows a provider's status codes and error
// bodies, so it is the only place that turns them into a Kind.
package outcome
