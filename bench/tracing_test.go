package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/bench/internal/collector"
	"github.com/llmrouter/llmrouter/bench/internal/load"
	"github.com/llmrouter/llmrouter/bench/internal/targets"
)

func TestParseRatio(t *testing.T) {
	tests := []struct {
		in      string
		want    float64
		wantErr bool
	}{
		{"1", 1, false},
		{"0", 0, false},
		{"0.1", 0.1, false},
		{" 0.25 ", 0.25, false},
		{"1.5", 0, true},
		{"-0.1", 0, true},
		{"NaN", 0, true},
		{"on", 0, true},
		{"", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseRatio(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestParseTargets: the traced router is asked for by name and takes its
// place in table order, after llmrouter, so the two are measured back to
// back.
func TestParseTargets(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr bool
	}{
		{"the default leaves tracing out", strings.Join(targets.Default, ","), []string{"direct", "nginx", "httputil", "llmrouter"}, false},
		{"tracing beside llmrouter, in table order", "llmrouter+tracing, llmrouter", []string{"llmrouter", "llmrouter+tracing"}, false},
		{"tracing alone", "llmrouter+tracing", []string{"llmrouter+tracing"}, false},
		{"every target", strings.Join(targets.All, ","), targets.All, false},
		{"unknown", "llmrouter,tracing", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseTargets(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error %v", err, tt.wantErr)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRunRejectsBadFlags: a bad flag ends the bench with status 2 and a
// message naming it, before anything is started.
func TestRunRejectsBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"ratio above 1", []string{"-tracing-ratio", "2"}, "-tracing-ratio"},
		{"ratio not a number", []string{"-tracing-ratio", "on"}, "-tracing-ratio"},
		{"unknown target", []string{"-only", "llmrouter+otel"}, "-only"},
		{"no rounds", []string{"-rounds", "0"}, "-rounds"},
		{"rounds of streams", []string{"-rounds", "3", "-streams", "100"}, "-rounds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tt.args, &stdout, &stderr); code != 2 {
				t.Errorf("got status %d, want 2", code)
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("got message %q, want one naming %s", stderr.String(), tt.want)
			}
		})
	}
}

func TestParseMetrics(t *testing.T) {
	const text = `# HELP llmrouter_requests_total Requests answered.
# TYPE llmrouter_requests_total counter
llmrouter_requests_total{api="chat",code="200",model="bench-model"} 1200
llmrouter_requests_total{api="chat",code="502",model="bench-model"} 3

llmrouter_tracing_spans_dropped_total{reason="export_failed"} 0
llmrouter_tracing_spans_dropped_total{reason="queue_full"} 17
llmrouter_tracing_spans_exported_total 2.389e+03
llmrouter_odd{msg="a b"} 4
`
	m, err := parseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		got  float64
		want float64
	}{
		{"requests, every series", m.sum(metricRequests), 1203},
		{"exported, exponent form", m[metricExported], 2389},
		{"dropped, queue full", m[metricQueueFull], 17},
		{"dropped, export failed", m[metricExportFailed], 0},
		{"a label value with a space", m[`llmrouter_odd{msg="a b"}`], 4},
		{"a prefix is not a metric", m.sum("llmrouter_requests"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
	if _, err := parseMetrics(strings.NewReader("llmrouter_requests_total\n")); err == nil {
		t.Error("a line without a value: got no error")
	}
}

// TestTraceTable: only traced rows are listed, with what the sink and the
// router counted during each.
func TestTraceTable(t *testing.T) {
	rows := []row{
		{mode: load.JSON, conc: 16, target: targets.Router, res: load.Result{OK: 1000, Elapsed: 1e9}},
		{mode: load.JSON, conc: 16, target: targets.RouterTracing, res: load.Result{OK: 1000, Elapsed: 1e9},
			spans: &traceCounts{sink: collector.Stats{Exports: 4, Spans: 2048, Bytes: 819200}, queueFull: 3}},
	}
	want := "\n" +
		"| mode | conc | target            | req/s | spans received | spans/req | exports | bytes/span | dropped: queue full | dropped: export failed |\n" +
		"| ---- | ---: | ----------------- | ----: | -------------: | --------: | ------: | ---------: | ------------------: | ---------------------: |\n" +
		"| json |   16 | llmrouter+tracing |  1000 |           2048 |      2.05 |       4 |        400 |                   3 |                      0 |\n"
	if got := traceTable(oneRound(rows...)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := traceTable(oneRound(rows[0])); got != "" {
		t.Errorf("without a traced row: got %q, want nothing", got)
	}
}

// TestLatencyTable: each proxy's percentiles minus direct's in the same
// (mode, concurrency); time to first event for streams only.
func TestLatencyTable(t *testing.T) {
	us := func(n ...int) []time.Duration {
		var d []time.Duration
		for _, v := range n {
			d = append(d, time.Duration(v)*time.Microsecond)
		}
		return d
	}
	rows := []row{
		{mode: load.JSON, conc: 1, target: targets.Direct, res: load.Result{Lat: us(100, 200), TTFT: us(90, 190)}},
		{mode: load.JSON, conc: 1, target: targets.Router, res: load.Result{Lat: us(150, 400), TTFT: us(140, 390)}},
		{mode: load.Stream, conc: 1, target: targets.Direct, res: load.Result{Lat: us(1000, 2000), TTFT: us(50, 70)}},
		{mode: load.Stream, conc: 1, target: targets.RouterBase, res: load.Result{Lat: us(1100, 2300), TTFT: us(80, 170)}},
		{mode: load.Stream, conc: 16, target: targets.Router, res: load.Result{Lat: us(1, 2)}}, // no direct row: left out
	}
	want := "\nAdded latency (this target minus direct, same mode and concurrency):\n\n" +
		"| mode   | conc | target         | p50 µs | p99 µs | +p50 µs | +p99 µs | TTFT p50 µs | TTFT p99 µs | +TTFT p50 µs | +TTFT p99 µs |\n" +
		"| ------ | ---: | -------------- | -----: | -----: | ------: | ------: | ----------: | ----------: | -----------: | -----------: |\n" +
		"| json   |    1 | direct         |    100 |    200 |       — |       — |           — |           — |            — |            — |\n" +
		"| json   |    1 | llmrouter      |    150 |    400 |      50 |     200 |           — |           — |            — |            — |\n" +
		"| stream |    1 | direct         |   1000 |   2000 |       — |       — |          50 |          70 |            — |            — |\n" +
		"| stream |    1 | llmrouter-base |   1100 |   2300 |     100 |     300 |          80 |         170 |           30 |          100 |\n"
	if got := latencyTable(oneRound(rows...)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := latencyTable(oneRound(rows[1])); got != "" {
		t.Errorf("without direct: got %q, want nothing", got)
	}
}
