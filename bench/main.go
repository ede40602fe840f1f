package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/llmrouter/llmrouter/bench/internal/collector"
	"github.com/llmrouter/llmrouter/bench/internal/load"
	"github.com/llmrouter/llmrouter/bench/internal/proc"
	"github.com/llmrouter/llmrouter/bench/internal/targets"
	"github.com/llmrouter/llmrouter/bench/internal/upstream"
	"github.com/llmrouter/llmrouter/internal/tracing"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the bench's flags, parsed.
type options struct {
	duration     time.Duration
	warmup       time.Duration
	conc         []int
	modes        []load.Mode
	only         []string
	router       string
	routerBase   string // a second llmrouter binary measured as targets.RouterBase; "" for none
	pprof        bool   // the routers serve /debug/pprof/ on their admin listeners
	nginxWorkers string
	goProcs      int
	streams      int
	interval     time.Duration
	chunks       int     // with streams: content chunks per stream
	upstream     string  // upstreamPlain or upstreamTLS
	traceRatio   float64 // tracing.sample_ratio of targets.RouterTracing
	syscalls     bool    // count each proxy's system calls and context switches (perf stat)
	rounds       int     // measurements of each (mode, concurrency, target), targets in turn (roundOrder); the tables print medians
}

// goEnv is the environment the Go proxies get on top of the bench's.
func (o options) goEnv() []string {
	if o.goProcs <= 0 {
		return nil
	}
	return []string{fmt.Sprintf("GOMAXPROCS=%d", o.goProcs)}
}

// -upstream values: how the proxies reach the fake upstream.
const (
	upstreamPlain = "plain" // HTTP/1.1 over TCP
	upstreamTLS   = "tls"   // HTTPS with HTTP/2 (ALPN h2) or HTTP/1.1, as real providers are reached
)

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "measured time per (mode, concurrency, target); with -streams, how long the streams are held while measured")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "unmeasured load before each measurement")
	concList := fs.String("concurrency", "1,16,64", "comma-separated closed-loop worker counts")
	modeList := fs.String("modes", "json,stream", "comma-separated: json (non-stream), stream")
	onlyList := fs.String("only", strings.Join(targets.Default, ","), "comma-separated subset of "+strings.Join(targets.All, ",")+" ("+targets.RouterTracing+": llmrouter with tracing on, exporting to the bench's OTLP sink)")
	traceRatio := fs.String("tracing-ratio", "1", "tracing.sample_ratio of "+targets.RouterTracing+", from 0 to 1 (on: 1)")
	fs.StringVar(&o.router, "router", "", "llmrouter binary; empty: ./cmd/router built as the Dockerfile builds it (static, CGO_ENABLED=0 -trimpath -ldflags='-s -w') into a temporary directory")
	fs.StringVar(&o.routerBase, "router-base", "", "a second llmrouter binary (e.g. built from an older commit), measured as "+targets.RouterBase+" right beside "+targets.Router+" with the same config: before and after in one run")
	fs.BoolVar(&o.pprof, "pprof", false, "the routers serve Go's profiler at /debug/pprof/ on their admin listeners (the address is printed), for profiles taken by hand during a run")
	fs.StringVar(&o.nginxWorkers, "nginx-workers", "auto", "nginx worker_processes (auto: one per core)")
	fs.IntVar(&o.goProcs, "go-procs", 0, "GOMAXPROCS of the Go proxies (httputil, llmrouter); 0: Go's default (the CPU limit, else one per core). With -nginx-workers 1 and -go-procs 1 every proxy gets one core, as a sidecar with a 1-CPU limit does")
	fs.BoolVar(&o.syscalls, "syscalls", true, "count each proxy's system calls and context switches per request with perf stat (raw_syscalls:sys_enter, context-switches), where perf can attach, and among them the Go scheduler's nanosleep and futex calls where perf can read those tracepoints; perf adds a little CPU to every system call while it counts")
	fs.IntVar(&o.rounds, "rounds", 1, "measure each (mode, concurrency) this many times, the targets in turn (table order, then reversed, then table order ...); the tables give each figure's median over the rounds and the summary each round's CPU ratio, taken within the round")
	fs.IntVar(&o.streams, "streams", 0, "instead of the table: this many closed-loop workers each send streams back to back through each proxy (-stream-chunks chunks -stream-interval apart); report peak RSS")
	fs.DurationVar(&o.interval, "stream-interval", 100*time.Millisecond, "with -streams: time between the upstream's content chunks")
	fs.IntVar(&o.chunks, "stream-chunks", 20, "with -streams: content chunks per stream")
	fs.StringVar(&o.upstream, "upstream", upstreamPlain, upstreamPlain+": the upstream speaks plain HTTP/1.1; "+upstreamTLS+": HTTPS with HTTP/2 (ALPN h2, else HTTP/1.1) and a CA generated at start, which every proxy is told to trust")
	// Internal: what a re-executed child is.
	role := fs.String("role", "", "internal: run as "+upstream.Role+", "+targets.BareProxyRole+" or "+collector.Role+" on the listener at fd 3")
	upBase := fs.String("upstream-url", "", "internal: the httputil role's upstream base URL")
	caFile := fs.String("ca", "", "internal: the httputil role's CA for an https upstream")
	certFile := fs.String("tls-cert", "", "internal: the upstream role's certificate (TLS mode)")
	keyFile := fs.String("tls-key", "", "internal: the upstream role's key (TLS mode)")
	listeners := fs.String("listeners", "", "internal: the upstream role's listeners (fd 3 on, the control listener after them), by target name")
	chunks := fs.Int("chunks", upstream.ContentChunks, "internal: content chunks per stream when -chunk-interval > 0")
	chunkInterval := fs.Duration("chunk-interval", 0, "internal: pause between the upstream's stream chunks")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *role != "" {
		if err := runRole(ctx, *role, *upBase, *caFile, *listeners,
			upstream.Config{Interval: *chunkInterval, Chunks: *chunks, CertFile: *certFile, KeyFile: *keyFile}); err != nil {
			fmt.Fprintln(stderr, "bench", *role+":", err)
			return 1
		}
		return 0
	}
	var err error
	if o.conc, err = parseInts(*concList); err != nil {
		fmt.Fprintln(stderr, "bench: -concurrency:", err)
		return 2
	}
	if o.modes, err = parseModes(*modeList); err != nil {
		fmt.Fprintln(stderr, "bench: -modes:", err)
		return 2
	}
	if o.only, err = parseTargets(*onlyList); err != nil {
		fmt.Fprintln(stderr, "bench: -only:", err)
		return 2
	}
	if o.traceRatio, err = parseRatio(*traceRatio); err != nil {
		fmt.Fprintln(stderr, "bench: -tracing-ratio:", err)
		return 2
	}
	if o.routerBase != "" {
		// Beside llmrouter, in table order.
		o.only, _ = parseTargets(strings.Join(append(o.only, targets.RouterBase), ","))
	} else if slices.Contains(o.only, targets.RouterBase) {
		fmt.Fprintf(stderr, "bench: -only %s needs -router-base PATH\n", targets.RouterBase)
		return 2
	}
	if o.upstream != upstreamPlain && o.upstream != upstreamTLS {
		fmt.Fprintf(stderr, "bench: -upstream: want %s or %s\n", upstreamPlain, upstreamTLS)
		return 2
	}
	if o.rounds < 1 || (o.rounds > 1 && o.streams > 0) {
		fmt.Fprintln(stderr, "bench: -rounds: want 1 or more, and 1 with -streams")
		return 2
	}
	if o.duration <= 0 || o.warmup < 0 || o.interval <= 0 || o.chunks < 1 {
		fmt.Fprintln(stderr, "bench: -duration, -stream-interval and -stream-chunks must be positive, -warmup not negative")
		return 2
	}
	if err := bench(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	return 0
}

// runRole is a re-executed child: serve on the listener passed as fd 3
// until SIGTERM.
func runRole(ctx context.Context, role, upBase, caFile, listeners string, u upstream.Config) error {
	switch role {
	case upstream.Role:
		names := strings.Split(listeners, ",")
		lns := map[string]net.Listener{}
		defer func() {
			for _, ln := range lns {
				ln.Close()
			}
		}()
		for i, name := range append(names, "") {
			ln, err := proc.InheritedListener(uintptr(3 + i))
			if err != nil {
				return err
			}
			if name == "" {
				return upstream.Serve(ctx, lns, ln, u)
			}
			lns[name] = ln
		}
	case targets.BareProxyRole:
		ln, err := proc.InheritedListener(3)
		if err != nil {
			return err
		}
		return targets.ServeBareProxy(ctx, ln, upBase, caFile)
	case collector.Role:
		ln, err := proc.InheritedListener(3)
		if err != nil {
			return err
		}
		return collector.Serve(ctx, ln)
	}
	return fmt.Errorf("unknown role %q", role)
}

// bench starts the processes, runs the table or the streams test, and
// stops everything it started, whatever happens.
func bench(ctx context.Context, o options, stdout, stderr io.Writer) error {
	tmp, err := os.MkdirTemp("", "llmrouter-bench-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	f := &proc.Fleet{}
	defer f.StopAll()

	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the bench binary: %w", err)
	}
	if (slices.Contains(o.only, targets.Router) || slices.Contains(o.only, targets.RouterTracing)) && o.router == "" {
		fmt.Fprintln(stderr, "building ./cmd/router ...")
		if o.router, err = targets.BuildRouter(ctx, tmp); err != nil {
			return err
		}
	}
	u := upstream.Config{}
	if o.streams > 0 {
		u = upstream.Config{Interval: o.interval, Chunks: o.chunks}
	}
	var ca string
	if o.upstream == upstreamTLS {
		certs, err := upstream.WriteCerts(tmp)
		if err != nil {
			return err
		}
		ca, u.CertFile, u.KeyFile = certs.CAFile, certs.CertFile, certs.KeyFile
	}
	up, err := upstream.Start(ctx, f, self, u, ca, o.only, targets.StartTimeout)
	if err != nil {
		return err
	}
	defer up.Close()
	// The trace sink is a process of its own: its CPU is neither the
	// router's nor the upstream's.
	var sink *collector.Handle
	if slices.Contains(o.only, targets.RouterTracing) {
		if sink, err = collector.Start(ctx, f, self, targets.StartTimeout); err != nil {
			return err
		}
		defer sink.Close()
	}
	var ts []targets.Target
	for _, name := range o.only {
		var t targets.Target
		switch name {
		case targets.Direct:
			if o.streams > 0 {
				continue
			}
			t = targets.Target{Name: targets.Direct, URL: up.Base(name) + "/v1/chat/completions", TLS: up.TLS}
		case targets.Nginx:
			t, err = targets.StartNginx(ctx, f, tmp, o.nginxWorkers, up.Base(name), ca)
		case targets.HTTPUtil:
			t, err = targets.StartBareProxy(ctx, f, self, up.Base(name), ca, o.goEnv())
		case targets.Router, targets.RouterBase, targets.RouterTracing:
			var tr tracing.Config // off
			if name == targets.RouterTracing {
				tr = tracing.Config{OTLPEndpoint: sink.Endpoint(), SampleRatio: o.traceRatio}
			}
			bin := o.router
			if name == targets.RouterBase {
				bin = o.routerBase
			}
			t, err = targets.StartRouter(ctx, f, name, bin, tmp, up.Base(name), ca, tr, o.pprof, o.goEnv())
			if err == nil && o.pprof {
				fmt.Fprintf(stderr, "%s: %s/debug/pprof/\n", name, t.Admin)
			}
		}
		if err != nil {
			return err
		}
		ts = append(ts, t)
	}
	fmt.Fprintf(stdout, "<!-- %s -->\n", machine(o))
	if o.streams > 0 {
		rows, err := holdStreams(ctx, o, up, ts, stderr)
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, streamsTable(o, rows))
		return traceTotals(ctx, sink, ts, stdout, stderr)
	}
	rows, err := measureAll(ctx, o, up, sink, ts, stderr)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, loadTable(rows))
	fmt.Fprint(stdout, latencyTable(rows))
	fmt.Fprint(stdout, summary(rows))
	fmt.Fprint(stdout, traceTable(rows))
	return traceTotals(ctx, sink, ts, stdout, stderr)
}

// machine describes where and how the numbers were taken.
func machine(o options) string {
	s := fmt.Sprintf("%s, %d cores, %s; upstream %s, duration %s, warm-up %s, nginx worker_processes %s",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), runtime.Version(), o.upstream, o.duration, o.warmup, o.nginxWorkers)
	if o.goProcs > 0 {
		s += fmt.Sprintf(", Go proxies GOMAXPROCS=%d", o.goProcs)
	}
	if o.rounds > 1 {
		s += fmt.Sprintf(", %d rounds (medians)", o.rounds)
	}
	if slices.Contains(o.only, targets.RouterTracing) {
		s += fmt.Sprintf(", %s sample_ratio %v", targets.RouterTracing, o.traceRatio)
	}
	if o.routerBase != "" {
		s += fmt.Sprintf(", %s %s", targets.RouterBase, o.routerBase)
	}
	if o.streams > 0 {
		s += fmt.Sprintf("; %d streams at once of %d chunks %s apart", o.streams, o.chunks, o.interval)
	}
	if out, err := exec.Command("nginx", "-v").CombinedOutput(); err == nil {
		s += ", " + strings.TrimSpace(strings.TrimPrefix(string(out), "nginx version: "))
	}
	return s
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 4096 {
			return nil, fmt.Errorf("%q: want integers from 1 to 4096", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func parseModes(s string) ([]load.Mode, error) {
	var out []load.Mode
	for _, f := range strings.Split(s, ",") {
		m := load.Mode(strings.TrimSpace(f))
		if m != load.JSON && m != load.Stream {
			return nil, fmt.Errorf("%q: want %s or %s", f, load.JSON, load.Stream)
		}
		out = append(out, m)
	}
	return out, nil
}

// parseTargets keeps table order whatever order the flag lists.
func parseTargets(s string) ([]string, error) {
	want := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(targets.All, f) {
			return nil, fmt.Errorf("%q: want some of %s", f, strings.Join(targets.All, ","))
		}
		want[f] = true
	}
	var out []string
	for _, t := range targets.All {
		if want[t] {
			out = append(out, t)
		}
	}
	return out, nil
}
