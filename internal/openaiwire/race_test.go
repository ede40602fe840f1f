//go:build race

package openaiwire

// raceEnabled says the race detector is on: it makes sync.Pool drop items
// on purpose, so an allocation count that relies on a pool does not hold.
const raceEnabled = true
