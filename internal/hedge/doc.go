// Package hedge is the hedging policy (docs/ARCHITECTURE.md, "Hedging"):
// routing.hedge's Config (when a request hedges) and the Share that caps
// how many requests do.
//
// The race itself is the attempt loop's (internal/failover): an attempt
// with no first content after Config.After gets a twin on another
// provider; the first to produce content commits, the other is cancelled
// and released as canceled.
//
// Share is a decaying count of the router's recent requests and of those
// that hedged, each multiplied by 1 − 1/Window at every request (about the
// last Window requests weigh): a request may hedge while the hedged count,
// this hedge included, stays within max_share of the total. It needs no
// clock: "recent" is counted in requests, so a quiet router's cap is the
// same as a busy one's. One mutex guards both counts.
package hedge
