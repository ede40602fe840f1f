//go:build !race

package reqctx

const raceEnabled = false
