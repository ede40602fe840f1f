package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

func TestEnvOverride(t *testing.T) {
	t.Setenv("LLMROUTER_LISTEN", "127.0.0.1:18080")
	t.Setenv("LLMROUTER_LIMITS_REQUEST_TIMEOUT", "45s")
	t.Setenv("LLMROUTER_LOG_LEVEL", "debug")
	c, err := Load(writeFile(t, "c.yaml", minimal))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:18080" || c.Limits.RequestTimeout != 45*time.Second || c.Log.Level != "debug" {
		t.Errorf("env overrides not applied: listen %q timeout %s level %q", c.Listen, c.Limits.RequestTimeout, c.Log.Level)
	}
}

func TestLoadErrorsNameTheKey(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"typo top level", "listne: 1.2.3.4:5\n" + minimal, "unknown key listne"},
		{"typo in provider", strings.Replace(minimal, "type: simulated", "type: simulated\n    api_kye_env: X", 1), "unknown key providers[0].api_kye_env"},
		{"typo in nested block", strings.Replace(minimal, "type: simulated", "type: simulated\n    simulated: {latncy: 1s}", 1), "providers[0].simulated.latncy"},
		{"bad duration", "limits: {request_timeout: soon}\n" + minimal, "request_timeout"},
		{"negative body limit", "limits: {max_body_bytes: -1}\n" + minimal, "limits.max_body_bytes: must be positive, got -1"},
		{"bad type", strings.Replace(minimal, "type: simulated", "type: openia", 1), `providers[0].type: must be one of`},
		{"unknown target provider", strings.Replace(minimal, "provider: p,", "provider: q,", 1), `models[0].targets[0].provider: no provider named "q"`},
		{"bad failure rate", strings.Replace(minimal, "type: simulated", "type: simulated\n    simulated: {failure_rate: 2}", 1), "providers[0].simulated.failure_rate: must be between 0 and 1, got 2"},
		{"block for other type", strings.Replace(minimal, "type: simulated", "type: openai\n    simulated: {}", 1), "providers[0].simulated: block given for a provider of type \"openai\""},
		{"compatible needs base_url", strings.Replace(minimal, "type: simulated", "type: openai_compatible", 1), "providers[0].base_url: required"},
		{"bad listen", "listen: nope\n" + minimal, `listen: must be host:port, got "nope"`},
		{"bad log level", "log: {level: loud}\n" + minimal, `log.level: must be debug, info, warn or error, got "loud"`},
		{"no models", "providers: [{name: p, type: simulated}]\nmodels: []\n", "models: at least one model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeFile(t, "c.yaml", tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestResolveKey(t *testing.T) {
	t.Setenv("TEST_KEY", " sk-123 \n")
	keyFile := writeFile(t, "key", "sk-file\n")
	tests := []struct {
		p       Provider
		want    string
		wantErr string
	}{
		{pr("openai", "TEST_KEY", ""), "sk-123", ""},
		{pr("openai", "", keyFile), "sk-file", ""},
		{pr("openai", "MISSING_KEY_VAR", ""), "", "api_key_env: environment variable MISSING_KEY_VAR is empty"},
		{pr("anthropic", "", ""), "", "needs an API key"},
		{pr("openai_compatible", "", ""), "", ""},
		{pr("openai", "", "/nonexistent/key"), "", "api_key_file"},
	}
	for _, tt := range tests {
		got, err := tt.p.ResolveKey()
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%+v: error %v, want %q", tt.p.Config, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%+v: got %q, %v; want %q", tt.p.Config, got, err, tt.want)
		}
	}
}

func pr(typ, env, file string) Provider {
	var p Provider
	p.Name, p.Type, p.APIKeyEnv, p.APIKeyFile = "x", typ, env, file
	return p
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
