package targets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/llmrouter/llmrouter/internal/config"
	"github.com/llmrouter/llmrouter/internal/tracing"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRouterYAML loads the config the bench writes for a router with the
// router's own loader (strict: a misspelt key is an error), tracing off
// and on: off writes no tracing: block, so the router runs on the
// embedded default (off); on points it at the sink at the ratio asked.
func TestRouterYAML(t *testing.T) {
	const sink = "http://127.0.0.1:4318"
	tests := []struct {
		name string
		tr   tracing.Config
		want tracing.Config // as the router decodes it
	}{
		{"off", tracing.Config{}, tracing.DefaultConfig()},
		{"on", tracing.Config{OTLPEndpoint: sink, SampleRatio: 1}, tracing.Config{OTLPEndpoint: sink, SampleRatio: 1}},
		{"a ratio", tracing.Config{OTLPEndpoint: sink, SampleRatio: 0.25}, tracing.Config{OTLPEndpoint: sink, SampleRatio: 0.25}},
		{"a small ratio (written 1e-05)", tracing.Config{OTLPEndpoint: sink, SampleRatio: 0.00001}, tracing.Config{OTLPEndpoint: sink, SampleRatio: 0.00001}},
		{"on, none kept but the clients' sampled traces", tracing.Config{OTLPEndpoint: sink}, tracing.Config{OTLPEndpoint: sink}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			yaml, err := routerYAML("127.0.0.1:18080", "127.0.0.1:19090", "http://127.0.0.1:18081", tt.tr, false)
			if err != nil {
				t.Fatalf("routerYAML: %v", err)
			}
			if got := strings.Contains(yaml, "tracing:"); got != tt.tr.On() {
				t.Errorf("tracing: block written %v, want %v:\n%s", got, tt.tr.On(), yaml)
			}
			path := filepath.Join(t.TempDir(), "router.yaml")
			if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := config.Load(path)
			if err != nil {
				t.Fatalf("the router refuses the bench's config: %v\n%s", err, yaml)
			}
			if c.Tracing != tt.want {
				t.Errorf("got tracing %+v, want %+v", c.Tracing, tt.want)
			}
			if c.Listen != "127.0.0.1:18080" || c.AdminListen != "127.0.0.1:19090" {
				t.Errorf("got listen %q, admin_listen %q, want 127.0.0.1:18080, 127.0.0.1:19090", c.Listen, c.AdminListen)
			}
		})
	}
}

// TestRouterYAMLRefusesBadTracing: a block the router would refuse is
// refused before a router is started, naming the key.
func TestRouterYAMLRefusesBadTracing(t *testing.T) {
	for _, tr := range []tracing.Config{
		{OTLPEndpoint: "http://127.0.0.1:4318", SampleRatio: 1.5},
		{OTLPEndpoint: "127.0.0.1:4318", SampleRatio: 1},
	} {
		if _, err := routerYAML("127.0.0.1:1", "127.0.0.1:2", "http://127.0.0.1:3", tr, false); err == nil || !strings.Contains(err.Error(), "tracing.") {
			t.Errorf("%+v: got error %v, want one naming its tracing. key", tr, err)
		}
	}
}

// TestRouterYAMLPprof: -pprof turns the router's profiler on; without it
// the embedded default's (off) stands.
func TestRouterYAMLPprof(t *testing.T) {
	for _, on := range []bool{false, true} {
		yaml, err := routerYAML("127.0.0.1:18080", "127.0.0.1:19090", "http://127.0.0.1:18081", tracing.Config{}, on)
		if err != nil {
			t.Fatalf("routerYAML: %v", err)
		}
		path := filepath.Join(t.TempDir(), "router.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := config.Load(path)
		if err != nil {
			t.Fatalf("the router refuses the bench's config: %v\n%s", err, yaml)
		}
		if c.Pprof != on {
			t.Errorf("pprof %v: the router reads pprof %v", on, c.Pprof)
		}
	}
}

// TestShipFlagsAreTheDockerfiles holds the bench's build of the router to
// the image's: cgo off and every flag of ShipFlags on the Dockerfile's go
// build line, so a change to one that the other misses fails here.
func TestShipFlagsAreTheDockerfiles(t *testing.T) {
	df, err := os.ReadFile(filepath.Join("..", "..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(df)
	if !strings.Contains(s, "CGO_ENABLED=0") {
		t.Errorf("the Dockerfile's build no longer sets CGO_ENABLED=0; BuildRouter does")
	}
	_, build, ok := strings.Cut(s, "go build ")
	if !ok {
		t.Fatal("no go build in the Dockerfile")
	}
	build, _, _ = strings.Cut(build, "./cmd/router")
	build = strings.ReplaceAll(build, "\\\n", " ")
	for _, f := range ShipFlags {
		flag, value, hasValue := strings.Cut(f, "=")
		want := flag
		if hasValue && strings.Contains(value, " ") {
			// -ldflags=-s -w against the Dockerfile's -ldflags "-s -w ...".
			want = flag + ` "` + value
		} else if hasValue {
			want = f
		}
		if !strings.Contains(build, want) {
			t.Errorf("the Dockerfile's go build line %q lacks %q (ShipFlags %q)", strings.TrimSpace(build), want, f)
		}
	}
}
