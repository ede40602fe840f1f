//go:build race

package proxy

// raceEnabled says the race detector is on: allocation counts differ.
const raceEnabled = true
