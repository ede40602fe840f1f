// Package shed is priority shedding (docs/ARCHITECTURE.md, "Degradation
// and shedding"): while the router is short of capacity (most providers'
// breakers open), low priority is refused at once, normal priority waits
// in a bounded queue for one of a bounded number of slots, and high
// priority is served as usual.
package shed
