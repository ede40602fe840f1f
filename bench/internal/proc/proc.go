// Package proc starts the bench's child processes, each the leader of its
// own process group and killed with the bench (Pdeathsig), stops them
// (SIGTERM, then SIGKILL after a grace period), and reads what a process
// group uses from /proc: CPU time (utime+stime), VmRSS and its peak
// (VmHWM).
//
// It also holds the child side of a re-executed bench: the listener
// inherited as a file, and an HTTP server bounded by a context.
package proc

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// clockTick is USER_HZ, the unit of utime and stime in /proc/PID/stat: 100
// on every Linux architecture Go supports (the kernel's CONFIG_HZ does not
// change it).
const ClockTick = 10 * time.Millisecond

// stopGrace is how long a child gets between SIGTERM and SIGKILL.
const stopGrace = 3 * time.Second

// Proc is one child process, leader of its own process group.
type Proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has been waited for
}

// Fleet owns every child the bench starts; StopAll ends them all.
type Fleet struct {
	mu    sync.Mutex // guards procs
	procs []*Proc
}

// Start runs path with args as its own process group, stdout and stderr
// going to the bench's stderr, extra files from fd 3 on. The child gets
// death if the bench dies (Pdeathsig): SIGKILL for a single process;
// SIGTERM for nginx, whose master then stops its workers (a killed master
// would leave them running).
func (f *Fleet) Start(name, path string, args []string, env []string, death syscall.Signal, extra ...*os.File) (*Proc, error) {
	cmd := exec.Command(path, args...)
	cmd.Stdout = &prefixWriter{prefix: name + ": ", w: os.Stderr}
	cmd.Stderr = cmd.Stdout
	cmd.Env = env
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: death}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	f.mu.Lock()
	f.procs = append(f.procs, p)
	f.mu.Unlock()
	return p, nil
}

// StopAll stops every child, last started first.
func (f *Fleet) StopAll() {
	f.mu.Lock()
	ps := f.procs
	f.procs = nil
	f.mu.Unlock()
	for i := len(ps) - 1; i >= 0; i-- {
		ps[i].stop()
	}
}

// PID is the process (and process group) id.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after stopGrace,
// and waits for the leader.
func (p *Proc) stop() {
	if p.Exited() {
		// The leader is gone; its group (nginx workers) may not be.
		_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
		return
	}
	_ = syscall.Kill(-p.PID(), syscall.SIGTERM)
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
		<-p.done
	}
	// Leftover group members (nginx workers after a master crash).
	_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
}

// Usage is what the processes of one group had used at one moment.
type Usage struct {
	CPU time.Duration // utime+stime summed over the group
	RSS int64         // VmRSS summed over the group, bytes
	// Peak is VmHWM, each process's peak resident set since it started
	// (or since ResetPeak), summed over the group, bytes.
	Peak int64
}

// GroupUsage reads /proc for every process whose process group is pgid.
// Summed RSS counts pages shared between processes (nginx's master and
// workers) once per process.
func GroupUsage(pgid int) (Usage, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return Usage{}, fmt.Errorf("reading /proc: %w", err)
	}
	var u Usage
	found := false
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone since ReadDir
		}
		group, cpu, err := parseStat(stat)
		if err != nil || group != pgid {
			continue
		}
		rss, peak, err := readRSS(pid)
		if err != nil {
			continue
		}
		found = true
		u.CPU += cpu
		u.RSS += rss
		u.Peak += peak
	}
	if !found {
		return Usage{}, fmt.Errorf("no process in group %d", pgid)
	}
	return u, nil
}

// parseStat reads the process group and utime+stime from /proc/PID/stat.
// The command name (field 2) may hold spaces and parentheses, so fields
// are counted from the last ')'.
func parseStat(b []byte) (pgrp int, cpu time.Duration, err error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, errors.New("parsing /proc stat: no ')'")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): pgrp is field 5, utime 14, stime 15.
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("parsing /proc stat: %d fields after the name", len(f))
	}
	pgrp, err = strconv.Atoi(f[2])
	if err != nil {
		return 0, 0, fmt.Errorf("parsing /proc stat pgrp: %w", err)
	}
	ut, err := strconv.ParseInt(f[11], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("parsing /proc stat utime: %w", err)
	}
	st, err := strconv.ParseInt(f[12], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("parsing /proc stat stime: %w", err)
	}
	return pgrp, time.Duration(ut+st) * ClockTick, nil
}

// readRSS reads VmRSS and VmHWM from /proc/PID/status, in bytes.
func readRSS(pid int) (rss, peak int64, err error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, 0, err
	}
	return parseStatus(b)
}

// parseStatus reads VmRSS and VmHWM from the text of /proc/PID/status.
func parseStatus(b []byte) (rss, peak int64, err error) {
	found := 0
	for line := range strings.Lines(string(b)) {
		var dst *int64
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			dst = &rss
		case strings.HasPrefix(line, "VmHWM:"):
			dst = &peak
		default:
			continue
		}
		name, v, _ := strings.Cut(line, ":")
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("parsing %s: %w", name, err)
		}
		*dst = kb << 10
		found++
	}
	if found < 2 {
		return 0, 0, errors.New("no VmRSS and VmHWM in /proc status")
	}
	return rss, peak, nil
}

// ResetPeak resets VmHWM of every process in the group to its current
// VmRSS (writing 5 to /proc/PID/clear_refs), so a later Peak is the peak
// since now.
func ResetPeak(pgid int) error {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("reading /proc: %w", err)
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if group, _, err := parseStat(stat); err != nil || group != pgid {
			continue
		}
		if err := os.WriteFile(filepath.Join("/proc", e.Name(), "clear_refs"), []byte("5"), 0); err != nil {
			return fmt.Errorf("resetting the peak RSS of %s: %w", e.Name(), err)
		}
	}
	return nil
}

// FreePort returns a loopback port that was free a moment ago (for nginx
// and the router, which bind their own listeners).
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// ListenerFile opens a loopback listener and returns it as a file to hand
// to a child (fd 3) and its address. The bench's copy is closed.
func ListenerFile() (*os.File, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("listening: %w", err)
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		return nil, "", fmt.Errorf("listener file: %w", err)
	}
	return f, ln.Addr().String(), nil
}

// WaitHTTP polls url with GET until it answers 200, p exits, or timeout.
// tlsConfig is for an https url (nil otherwise).
func WaitHTTP(ctx context.Context, p *Proc, url string, tlsConfig *tls.Config, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig.Clone()}}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", p.name, err)
		}
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("status %d", resp.StatusCode)
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s at %s: %w (last: %v)", p.name, url, ctx.Err(), last)
		case <-p.done:
			return fmt.Errorf("%s exited while starting (%s)", p.name, p.cmd.ProcessState)
		case <-tick.C:
		}
	}
}

// prefixWriter prefixes each line a child writes, so interleaved logs say
// who wrote them.
type prefixWriter struct {
	mu     sync.Mutex // guards buf and writes to w
	prefix string
	w      io.Writer
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		if _, err := fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i]); err != nil {
			return 0, err
		}
		p.buf = p.buf[i+1:]
	}
	return len(b), nil
}

// InheritedListener is the child side of ListenerFile: the listener a
// re-executed bench was handed as file descriptor fd (3 for the first of
// the parent's extra files).
func InheritedListener(fd uintptr) (net.Listener, error) {
	f := os.NewFile(fd, "listener")
	if f == nil {
		return nil, fmt.Errorf("no listener at fd %d", fd)
	}
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("listener at fd %d: %w", fd, err)
	}
	return ln, nil
}

// ServeUntil serves srv on ln until ctx ends (the child's SIGTERM), then
// closes the server.
func ServeUntil(ctx context.Context, srv *http.Server, ln net.Listener) error {
	if srv.ReadHeaderTimeout == 0 {
		srv.ReadHeaderTimeout = 10 * time.Second
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		srv.Close()
		<-errc
		return nil
	case err := <-errc:
		return fmt.Errorf("serving %s: %w", ln.Addr(), err)
	}
}

// Env is the bench's environment without LLMROUTER_ variables (a
// developer's overrides must not change the router under test), plus add.
func Env(add ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LLMROUTER_") {
			out = append(out, kv)
		}
	}
	return append(out, add...)
}

// Counts are what perf stat counted for a group of processes over a run.
type Counts struct {
	Syscalls, ContextSwitches int64
	// Nanosleep and Futex are the nanosleep and futex calls among
	// Syscalls: the Go runtime's scheduler sleeping (sysmon's usleep) and
	// parking and waking idle threads. Counted only when Sched is true
	// (perf could read their tracepoints); zero otherwise.
	Nanosleep, Futex int64
	Sched            bool
}

// perf stat's events: the two every count has, and the two syscall
// tracepoints that are the Go scheduler's own calls. The latter need the
// kernel's per-syscall tracepoints (CONFIG_FTRACE_SYSCALLS) and the right
// to read them; without them the count falls back to the first two.
const (
	perfEvents      = "raw_syscalls:sys_enter,context-switches"
	perfSchedEvents = perfEvents + ",syscalls:sys_enter_nanosleep,syscalls:sys_enter_futex"
)

// Counter counts the system calls and context switches of a process
// group's processes with `perf stat` (the raw_syscalls:sys_enter
// tracepoint, the context-switches software event and, where perf can,
// the nanosleep and futex tracepoints), from CountGroup to Stop. It needs
// perf and the right to attach to the processes.
type Counter struct {
	cmd *exec.Cmd
	out bytes.Buffer
}

// CountGroup starts counting the processes of group pgid (their threads
// included). A process the group gains later is not counted.
func CountGroup(pgid int) (*Counter, error) {
	perf, err := exec.LookPath("perf")
	if err != nil {
		return nil, err
	}
	pids, err := groupPIDs(pgid)
	if err != nil {
		return nil, err
	}
	events := perfEvents
	if schedCountable() {
		events = perfSchedEvents
	}
	c := &Counter{}
	c.cmd = exec.Command(perf, "stat", "-x", ",", "-e", events, "-p", strings.Join(pids, ","))
	c.cmd.Stderr = &c.out
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	// perf attaches before it counts; give it that moment, so the run is
	// counted from its start.
	time.Sleep(50 * time.Millisecond)
	return c, nil
}

// schedCountable reports whether perf can count the nanosleep and futex
// tracepoints, by counting them over a command of its own (true): a
// kernel without them, or a tracefs perf may not read, makes perf refuse
// before it runs anything. Attaching to a proxy needs no more rights for
// them than for raw_syscalls:sys_enter. Asked once: the answer cannot
// change during a run, and asking costs a start of perf (about 0.1 s).
var schedCountable = sync.OnceValue(func() bool {
	perf, err := exec.LookPath("perf")
	if err != nil {
		return false
	}
	cmd := exec.Command(perf, "stat", "-x", ",", "-e", strings.TrimPrefix(perfSchedEvents, perfEvents+","), "--", "true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd.Run() == nil
})

// Stop ends the count and returns it.
func (c *Counter) Stop() (Counts, error) {
	_ = c.cmd.Process.Signal(os.Interrupt)
	err := c.cmd.Wait()
	n, perr := parsePerf(c.out.String())
	if perr != nil {
		return n, fmt.Errorf("perf stat counted nothing (%v): %w", err, perr)
	}
	return n, nil
}

// parsePerf reads what perf stat -x , wrote: a line per event,
// "count,unit,event,...", the count "<not counted>" or "<not supported>"
// when there is none. Both of perfEvents must be there; Sched says
// whether nanosleep and futex were too.
func parsePerf(out string) (Counts, error) {
	var n Counts
	found, sched := 0, 0
	for line := range strings.Lines(out) {
		f := strings.Split(strings.TrimSpace(line), ",")
		if len(f) < 3 {
			continue
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch f[2] {
		case "raw_syscalls:sys_enter":
			n.Syscalls, found = v, found+1
		case "context-switches":
			n.ContextSwitches, found = v, found+1
		case "syscalls:sys_enter_nanosleep":
			n.Nanosleep, sched = v, sched+1
		case "syscalls:sys_enter_futex":
			n.Futex, sched = v, sched+1
		}
	}
	if found < 2 {
		return Counts{}, fmt.Errorf("no count of %s in %q", perfEvents, strings.TrimSpace(out))
	}
	if n.Sched = sched == 2; !n.Sched {
		n.Nanosleep, n.Futex = 0, 0
	}
	return n, nil
}

// groupPIDs lists the processes of group pgid.
func groupPIDs(pgid int) ([]string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if group, _, err := parseStat(stat); err == nil && group == pgid {
			pids = append(pids, e.Name())
		}
	}
	if len(pids) == 0 {
		return nil, fmt.Errorf("no process in group %d", pgid)
	}
	return pids, nil
}
