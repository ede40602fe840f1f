//go:build race

package provider

// raceEnabled says the race detector is on: allocation counts differ.
const raceEnabled = true
