// Package backoff computes the wait before retrying the same provider:
// exponential growth from an initial delay by a multiplier, capped, with
// jitter drawn from an injected random source so tests are exact.
//
// Delay(n) for the n-th retry (n >= 1) is
//
//	d = min(initial × multiplier^(n-1), max)
//	delay = d × (1 − jitter × u),  u uniform in [0, 1)
//
// so jitter 0.5 spreads retries over [d/2, d]: never longer than the
// capped value, never zero, and decorrelated across clients so a
// recovering provider is not hit by a synchronized wave.
package backoff
