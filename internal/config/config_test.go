package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/provider"
)

func writeFile(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const minimal = `
providers:
  - name: p
    type: simulated
models:
  - name: m
    targets: [{provider: p, model: x}]
`

func TestLoadEmbeddedDefault(t *testing.T) {
	c, err := Load("")
	if err != nil {
		t.Fatalf("embedded default does not load: %v", err)
	}
	if c.Listen != "127.0.0.1:8080" || c.AdminListen != "127.0.0.1:9090" {
		t.Errorf("listen = %q admin = %q", c.Listen, c.AdminListen)
	}
	if len(c.Providers) == 0 || len(c.Models) == 0 {
		t.Fatalf("default has %d providers, %d models", len(c.Providers), len(c.Models))
	}
	for _, p := range c.Providers {
		if p.Type != "simulated" {
			t.Errorf("default provider %s is %s, want simulated (no keys, no network)", p.Name, p.Type)
		}
	}
}

func TestLoadFileKeepsDefaultScalarsNotLists(t *testing.T) {
	c, err := Load(writeFile(t, "c.yaml", minimal))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Providers) != 1 || c.Providers[0].Name != "p" {
		t.Errorf("providers = %+v, want only p", c.Providers)
	}
	if c.Limits.RequestTimeout != 300*time.Second || c.Limits.MaxBodyBytes != 10<<20 {
		t.Errorf("limits = %+v, want the defaults", c.Limits)
	}
}

// TestTargetMaxOutputTokens: a target's cap is read as given; absent is 0
// (no cap).
func TestTargetMaxOutputTokens(t *testing.T) {
	c, err := Load(writeFile(t, "c.yaml", strings.Replace(minimal, "model: x}", "model: x, max_output_tokens: 16384}, {provider: p, model: y, tier: 1}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	tg := c.Models[0].Targets
	if len(tg) != 2 || tg[0].MaxOutputTokens != 16384 || tg[1].MaxOutputTokens != 0 {
		t.Errorf("targets = %+v, want max_output_tokens 16384 then 0", tg)
	}
}

func TestEnvOverride(t *testing.T) {
	t.Setenv("LLMROUTER_LISTEN", "127.0.0.1:18080")
	t.Setenv("LLMROUTER_LIMITS_REQUEST_TIMEOUT", "45s")
	t.Setenv("LLMROUTER_LOG_LEVEL", "debug")
	t.Setenv("LLMROUTER_TRACING_OTLP_ENDPOINT", "http://otel-collector:4318")
	t.Setenv("LLMROUTER_ROUTING_AFFINITY_ENABLED", "false")
	c, err := Load(writeFile(t, "c.yaml", minimal))
	if err != nil {
		t.Fatal(err)
	}
	if c.Tracing.OTLPEndpoint != "http://otel-collector:4318" || c.Tracing.SampleRatio != 1 {
		t.Errorf("tracing = %+v, want the env's endpoint and the default ratio", c.Tracing)
	}
	if c.Listen != "127.0.0.1:18080" || c.Limits.RequestTimeout != 45*time.Second || c.Log.Level != "debug" {
		t.Errorf("env overrides not applied: listen %q timeout %s level %q", c.Listen, c.Limits.RequestTimeout, c.Log.Level)
	}
	if c.Routing.Affinity.Enabled || c.Routing.Affinity.TTL != time.Hour {
		t.Errorf("routing.affinity %+v, want off by the environment, ttl 1h by default", c.Routing.Affinity)
	}
}

func TestLoadErrorsNameTheKey(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"typo top level", "listne: 1.2.3.4:5\n" + minimal, "unknown key listne"},
		{"bad duration", "limits: {request_timeout: soon}\n" + minimal, `limits.request_timeout: must be a duration such as 30s or 250ms, got "soon"`},
		{"bare number duration", "shutdown_timeout: 30\n" + minimal, "shutdown_timeout: must be a duration with a unit such as 30s or 250ms, got 30"},
		{"bad provider duration", strings.Replace(minimal, "type: simulated", "type: simulated\n    timeout: 10x", 1), `providers[0].timeout: must be a duration such as 30s or 250ms, got "10x"`},
		{"bad number", strings.Replace(minimal, "type: simulated", "type: simulated\n    max_concurrency: lots", 1), `providers[0].max_concurrency: must be a whole number, got "lots"`},
		{"string wanted", "listen: [1, 2]\n" + minimal, "listen: must be a string, got [1 2]"},
		{"negative body limit", "limits: {max_body_bytes: -1}\n" + minimal, "limits.max_body_bytes: must be positive, got -1"},
		{"negative response limit", "limits: {max_response_bytes: -1}\n" + minimal, "limits.max_response_bytes: must not be negative, got -1"},
		{"negative rpm", strings.Replace(minimal, "type: simulated", "type: simulated\n    rpm: -5", 1), "providers[0].rpm: must not be negative, got -5"},
		{"unknown target provider", strings.Replace(minimal, "provider: p,", "provider: q,", 1), `models[0].targets[0].provider: no provider named "q"`},
		{"star inside a model name", strings.Replace(minimal, "name: m", `name: "claude-*-opus"`, 1), "models[0].name: `*` may only end a pattern, got \"claude-*-opus\""},
		{"bad listen", "listen: nope\n" + minimal, `listen: must be host:port, got "nope"`},
		{"bad log level", "log: {level: loud}\n" + minimal, `log.level: must be debug, info, warn or error, got "loud"`},
		{"short affinity ttl", "routing: {affinity: {ttl: 10ms}}\n" + minimal, "routing.affinity.ttl: must be at least 1s (or 0 for the default), got 10ms"},
		{"affinity typo", "routing: {affinity: {enable: true}}\n" + minimal, "unknown key routing.affinity.enable"},
		{"negative hedge after", "routing: {hedge: {after: -1s}}\n" + minimal, "routing.hedge.after: must not be negative (0 turns hedging off), got -1s"},
		{"hedge share above 1", "routing: {hedge: {after: 1s, max_share: 2}}\n" + minimal, "routing.hedge.max_share: must be in (0, 1], got 2"},
		{"hedge share 0", "routing: {hedge: {max_share: 0}}\n" + minimal, "routing.hedge.max_share: must be in (0, 1], got 0"},
		{"hedge typo", "routing: {hedge: {afer: 1s}}\n" + minimal, "unknown key routing.hedge.afer"},
		{"no models", "providers: [{name: p, type: simulated}]\nmodels: []\n", "models: at least one model is required"},
		{"tracing endpoint", "tracing: {otlp_endpoint: otel-collector:4318}\n" + minimal, `tracing.otlp_endpoint: must be an http:// or https:// URL such as http://otel-collector:4318, got "otel-collector:4318"`},
		{"tracing ratio", "tracing: {sample_ratio: 2}\n" + minimal, "tracing.sample_ratio: must be between 0 and 1, got 2"},
		{"tracing typo", "tracing: {otlp_endpont: http://x:4318}\n" + minimal, "unknown key tracing.otlp_endpont"},
		{"negative max_output_tokens", strings.Replace(minimal, "model: x}", "model: x, max_output_tokens: -1}", 1), "models[0].targets[0].max_output_tokens: must not be negative, got -1"},
		{"max_output_tokens not a number", strings.Replace(minimal, "model: x}", "model: x, max_output_tokens: lots}", 1), `models[0].targets[0].max_output_tokens: must be a whole number, got "lots"`},
		{"max_output_tokens typo", strings.Replace(minimal, "model: x}", "model: x, max_output_token: 16384}", 1), "unknown key models[0].targets[0].max_output_token"},
		{"duplicate provider", strings.Replace(minimal, "providers:\n", "providers:\n  - {name: p, type: simulated}\n", 1), `providers[1].name: duplicate provider name "p"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeFile(t, "c.yaml", tt.yaml))
			if err == nil || !slices.Contains(strings.Split(err.Error(), "\n"), tt.want) {
				t.Errorf("got error %v, want one line %q", err, tt.want)
			}
		})
	}
}

// TestCheckReportsEveryProblem: one run names every fault of a file, each
// once, and a key that failed to decode is not blamed again for its zero
// value.
func TestCheckReportsEveryProblem(t *testing.T) {
	yaml := `
listen: [1, 2]
limits: {request_timeout: soon}
log: {level: loud, format: xml}
routing: {retry: {max_attempts: 0, jitter: 2}}
providers:
  - {name: "a b", type: simulated, rpm: -1, tpm: -2, timeout: 10x}
  - {name: c, type: simulated, max_concurrency: lots}
models:
  - name: m
    targets: [{provider: nobody, model: "", tier: -1}]
`
	c, err := Check(writeFile(t, "c.yaml", yaml))
	if c == nil {
		t.Fatalf("got no config, want one with the problems: %v", err)
	}
	want := []string{
		"listen: must be a string, got [1 2]",
		`limits.request_timeout: must be a duration such as 30s or 250ms, got "soon"`,
		`providers[0].timeout: must be a duration such as 30s or 250ms, got "10x"`,
		`providers[1].max_concurrency: must be a whole number, got "lots"`,
		`log.level: must be debug, info, warn or error, got "loud"`,
		`log.format: must be json or text, got "xml"`,
		"routing.retry.max_attempts: must be at least 1, got 0",
		"routing.retry.jitter: must be between 0 and 1, got 2",
		`providers[0].name: may hold only letters, digits, '_', '.', '-', got "a b"`,
		"providers[0].rpm: must not be negative, got -1",
		"providers[0].tpm: must not be negative, got -2",
		`models[0].targets[0].provider: no provider named "nobody"`,
		"models[0].targets[0].model: must not be empty",
		"models[0].targets[0].tier: must not be negative, got -1",
	}
	got := strings.Split(err.Error(), "\n")
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("got problems\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if _, err := Load(writeFile(t, "c.yaml", yaml)); err == nil {
		t.Error("Load accepted what Check rejects")
	}
}

func TestResolveTypes(t *testing.T) {
	type block struct {
		Latency time.Duration `mapstructure:"latency"`
		Rate    float64       `mapstructure:"rate"`
	}
	types := provider.Types{
		{Name: "plain", Build: func(provider.Config, string, any) (provider.Adapter, error) { return nil, nil }},
		{Name: "blocky", NewBlock: func() any { return new(block) }, Build: func(provider.Config, string, any) (provider.Adapter, error) { return nil, nil }},
	}
	tests := []struct {
		name, entry string
		wantType    string
		wantBlock   any    // nil: no block
		wantErr     string // "" means no error
	}{
		{"plain", "{name: p, type: plain}", "plain", nil, ""},
		{"block absent is zero", "{name: p, type: blocky}", "blocky", &block{}, ""},
		{"block decoded", "{name: p, type: blocky, blocky: {latency: 2s, rate: 0.5}}", "blocky", &block{Latency: 2 * time.Second, Rate: 0.5}, ""},
		{"unknown type", "{name: p, type: nope}", "", nil, `providers[0].type: must be one of plain, blocky, got "nope"`},
		{"typo in entry", "{name: p, type: plain, api_kye_env: X}", "plain", nil, "unknown key providers[0].api_kye_env"},
		{"a limits key in an entry", "{name: p, type: plain, max_response_bytes: 5}", "plain", nil, "unknown key providers[0].max_response_bytes"},
		{"typo in block", "{name: p, type: blocky, blocky: {latncy: 1s}}", "blocky", &block{}, "unknown key providers[0].blocky.latncy"},
		{"bad value in block", "{name: p, type: blocky, blocky: {latency: 1x, rate: 0.5}}", "blocky", &block{Rate: 0.5},
			`providers[0].blocky.latency: must be a duration such as 30s or 250ms, got "1x"`},
		{"block of another type", "{name: p, type: plain, blocky: {}}", "plain", nil, `providers[0].blocky: block given for a provider of type "plain"`},
		{"type without a block", "{name: p, type: plain, plain: {}}", "plain", nil, "unknown key providers[0].plain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			yaml := "providers: [" + tt.entry + "]\nmodels: [{name: m, targets: [{provider: p, model: x}]}]\n"
			c, err := Load(writeFile(t, "c.yaml", yaml))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			got, err := c.ResolveTypes(types)
			if gotErr := fmt.Sprint(err); tt.wantErr == "" && err != nil || tt.wantErr != "" && gotErr != tt.wantErr {
				t.Errorf("got error %v, want %q", err, tt.wantErr)
			}
			if len(got) != 1 {
				t.Fatalf("got %d resolved entries, want 1", len(got))
			}
			if got[0].Type.Name != tt.wantType {
				t.Errorf("got type %q, want %q", got[0].Type.Name, tt.wantType)
			}
			if !reflect.DeepEqual(got[0].Block, tt.wantBlock) {
				t.Errorf("got block %#v, want %#v", got[0].Block, tt.wantBlock)
			}
		})
	}
}

func TestUnknownEnv(t *testing.T) {
	t.Setenv("LLMROUTER_LISTN", "127.0.0.1:1")            // a typo
	t.Setenv("LLMROUTER_LIMITS_REQUEST_TIMEOUT", "45s")   // a key
	t.Setenv("LLMROUTER_API_KEYS", "k")                   // named by auth.api_keys_env
	t.Setenv("LLMROUTER_TEST_PROVIDER_KEY", "k")          // named by a provider's api_key_env
	t.Setenv("LLMROUTER_ROUTING_RETRY_MAX_ATTEMPTS", "2") // a nested key
	t.Setenv("LLMROUTER_BREAKER_COOLDOWN_MAXIMUM", "1s")  // a typo, nested
	yaml := strings.Replace(minimal, "type: simulated", "type: simulated\n    api_key_env: LLMROUTER_TEST_PROVIDER_KEY", 1)
	c, err := Load(writeFile(t, "c.yaml", yaml))
	if err != nil {
		t.Fatal(err)
	}
	got, want := c.UnknownEnv(), []string{"LLMROUTER_BREAKER_COOLDOWN_MAXIMUM", "LLMROUTER_LISTN"}
	if !slices.Equal(got, want) {
		t.Errorf("got unknown %q, want %q", got, want)
	}
}

func TestClientKeys(t *testing.T) {
	c := &Config{}
	if keys, empty := c.ClientKeys(); keys != nil || empty {
		t.Errorf("no env named: got %v %v", keys, empty)
	}
	c.Auth.APIKeysEnv = "TEST_CLIENT_KEYS"
	t.Setenv("TEST_CLIENT_KEYS", "")
	if keys, empty := c.ClientKeys(); keys != nil || !empty {
		t.Errorf("empty env: got %v %v", keys, empty)
	}
	t.Setenv("TEST_CLIENT_KEYS", "a, b,,c")
	if keys, _ := c.ClientKeys(); strings.Join(keys, "|") != "a|b|c" {
		t.Errorf("keys = %v", keys)
	}
}
