//go:build race

package reqctx

// raceEnabled says the race detector is on: allocation counts differ.
const raceEnabled = true
