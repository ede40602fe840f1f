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

func TestParseStatus(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		rss, peak  int64
		wantErrors bool
	}{
		{"both", "Name:\trouter\nVmPeak:\t 1000 kB\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\nRssAnon:\t 1 kB\n", 10 << 20, 20 << 20, false},
		{"no peak", "VmRSS:\t 4 kB\n", 0, 0, true},
		{"garbled", "VmRSS:\t x kB\nVmHWM:\t 4 kB\n", 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rss, peak, err := parseStatus([]byte(tt.in))
			if (err != nil) != tt.wantErrors || rss != tt.rss || peak != tt.peak {
				t.Errorf("got %d, %d, %v; want %d, %d, error %v", rss, peak, err, tt.rss, tt.peak, tt.wantErrors)
			}
		})
	}
}
