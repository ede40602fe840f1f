//go:build race

package api

// raceEnabled says the race detector is on: allocation counts differ.
const raceEnabled = true
