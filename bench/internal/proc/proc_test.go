package proc

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseStat(t *testing.T) {
	// A command name with spaces and a ')' must not shift the fields.
	stat := []byte("4242 (we ird) name) S 1 777 777 0 -1 4194560 100 0 0 0 150 25 0 0 20 0 3 0 100 1000 50 18446744073709551615")
	pgrp, cpu, err := parseStat(stat)
	if err != nil {
		t.Fatalf("got error %v, want none", err)
	}
	if pgrp != 777 || cpu != 175*ClockTick {
		t.Errorf("got pgrp %d cpu %v, want 777 %v", pgrp, cpu, 175*ClockTick)
	}
}
