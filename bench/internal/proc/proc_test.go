package proc

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them. Run
// with PROC_TEST_CHILD=sleeper, the test binary is TestCountGroup's child
// instead: a Go program that sleeps a millisecond at a time until killed.
func TestMain(m *testing.M) {
	if os.Getenv("PROC_TEST_CHILD") == "sleeper" {
		for {
			time.Sleep(time.Millisecond)
		}
	}
	goleak.VerifyTestMain(m)
}

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

func TestParsePerf(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		want    Counts
		wantErr bool
	}{
		{
			name: "the two events",
			out:  "13721,,raw_syscalls:sys_enter,229150384,100.00,,\n237,,context-switches,229150384,100.00,,\n",
			want: Counts{Syscalls: 13721, ContextSwitches: 237},
		},
		{
			name: "with the scheduler's calls",
			out: "13721,,raw_syscalls:sys_enter,229150384,100.00,,\n237,,context-switches,229150384,100.00,,\n" +
				"12,,syscalls:sys_enter_nanosleep,229150384,100.00,,\n73,,syscalls:sys_enter_futex,229150384,100.00,,\n",
			want: Counts{Syscalls: 13721, ContextSwitches: 237, Nanosleep: 12, Futex: 73, Sched: true},
		},
		{
			name: "none of the scheduler's calls is still counted",
			out: "900,,raw_syscalls:sys_enter,1,100.00,,\n8,,context-switches,1,100.00,,\n" +
				"0,,syscalls:sys_enter_nanosleep,1,100.00,,\n0,,syscalls:sys_enter_futex,1,100.00,,\n",
			want: Counts{Syscalls: 900, ContextSwitches: 8, Sched: true},
		},
		{
			name: "one scheduler tracepoint not counted: neither is reported",
			out: "900,,raw_syscalls:sys_enter,1,100.00,,\n8,,context-switches,1,100.00,,\n" +
				"5,,syscalls:sys_enter_nanosleep,1,100.00,,\n<not counted>,,syscalls:sys_enter_futex,0,100.00,,\n",
			want: Counts{Syscalls: 900, ContextSwitches: 8},
		},
		{
			name: "perf's own lines around the counts",
			out:  "# started on Mon\n\n900,,raw_syscalls:sys_enter,1,100.00,,\n8,,context-switches,1,100.00,,\nsome warning\n",
			want: Counts{Syscalls: 900, ContextSwitches: 8},
		},
		{
			name:    "the process never ran",
			out:     "<not counted>,,raw_syscalls:sys_enter,0,100.00,,\n<not counted>,,context-switches,0,100.00,,\n",
			wantErr: true,
		},
		{
			name:    "perf refused",
			out:     "event syntax error: 'raw_syscalls:sys_enter,context-switches'\n",
			wantErr: true,
		},
		{
			name:    "context switches missing",
			out:     "900,,raw_syscalls:sys_enter,1,100.00,,\n5,,syscalls:sys_enter_nanosleep,1,100.00,,\n6,,syscalls:sys_enter_futex,1,100.00,,\n",
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parsePerf(tt.out)
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestCountGroup counts a Go process with perf, where perf is installed
// and may attach: system calls and, where the tracepoints can be read,
// the scheduler's nanosleep and futex calls, which a Go program sleeping
// a millisecond at a time makes.
func TestCountGroup(t *testing.T) {
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("no perf")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f := &Fleet{}
	defer f.StopAll()
	p, err := f.Start("sleeper", self, nil, append(os.Environ(), "PROC_TEST_CHILD=sleeper"), syscall.SIGKILL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := CountGroup(p.PID())
	if err != nil {
		t.Skipf("perf cannot count here: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // the counted period: nothing waits on it
	n, err := c.Stop()
	if err != nil {
		t.Skipf("perf cannot attach here: %v", err)
	}
	t.Logf("%+v", n)
	if n.Syscalls == 0 {
		t.Errorf("got %+v, want system calls", n)
	}
	if n.Sched != schedCountable() {
		t.Errorf("got Sched %v, want %v (perf can count the tracepoints: %v)", n.Sched, schedCountable(), schedCountable())
	}
	if n.Sched && n.Nanosleep+n.Futex == 0 {
		t.Errorf("got %+v, want nanosleep or futex calls from Go's scheduler", n)
	}
}
