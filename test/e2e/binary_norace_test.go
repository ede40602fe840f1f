//go:build !race

package e2e

// raceEnabled: this test binary has no race detector, so neither has the
// router binary.
const raceEnabled = false
