package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/llmrouter/llmrouter/internal/config"
	"github.com/llmrouter/llmrouter/internal/daemon"
)

// writeConfig writes yaml to a file in a fresh directory.
func writeConfig(t testing.TB, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// problemLines returns what a command printed on stderr, one problem or
// log message per line; a JSON log line stands for its error (or message).
func problemLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(l), &rec) == nil {
			if e, ok := rec["error"].(string); ok {
				out = append(out, strings.Split(e, "\n")...)
				continue
			}
			l, _ = rec["msg"].(string)
		}
		out = append(out, strings.TrimSpace(strings.TrimPrefix(l, "router:")))
	}
	return out
}

const oneModel = "models: [{name: m, targets: [{provider: p, model: x}]}]\n"

// TestValidateRejectsWhatServeRejects feeds files serve refuses to router
// validate and to router serve: both must fail, with the same message
// naming the key.
func TestValidateRejectsWhatServeRejects(t *testing.T) {
	t.Setenv("LLMROUTER_LISTEN", "127.0.0.1:0")
	t.Setenv("LLMROUTER_ADMIN_LISTEN", "127.0.0.1:0")
	t.Setenv("TEST_ROUTER_KEY", "sk-test")
	missingKeyFile := filepath.Join(t.TempDir(), "no-such-key")
	tests := []struct {
		name, yaml string
		want       string // one line of both commands' output
	}{
		{"azure base_url with the API path",
			"providers: [{name: p, type: azure, base_url: https://r.openai.azure.com/openai, api_key_env: TEST_ROUTER_KEY}]\n" + oneModel,
			`providers[0].base_url: "https://r.openai.azure.com/openai": give scheme://host only for azure, the adapter appends the /openai path`},
		{"unset API key variable",
			"providers: [{name: p, type: openai, api_key_env: TEST_ROUTER_UNSET_KEY}]\n" + oneModel,
			"providers[0].api_key_env: environment variable TEST_ROUTER_UNSET_KEY is unset or empty"},
		{"unknown provider type",
			"providers: [{name: p, type: openia, api_key_env: TEST_ROUTER_KEY}]\n" + oneModel,
			`providers[0].type: must be one of openai, azure, anthropic, gemini, bedrock, vertex, openai_compatible, simulated, got "openia"`},
		{"target names a missing provider",
			"providers: [{name: p, type: simulated}]\nmodels: [{name: m, targets: [{provider: ghost, model: x}]}]\n",
			`models[0].targets[0].provider: no provider named "ghost"`},
		{"bad base_url",
			"providers: [{name: p, type: openai_compatible, base_url: 'ftp://localhost:11434/v1'}]\n" + oneModel,
			`providers[0].base_url: "ftp://localhost:11434/v1": scheme must be http or https`},
		{"missing key file",
			"providers: [{name: p, type: anthropic, api_key_file: " + missingKeyFile + "}]\n" + oneModel,
			"providers[0].api_key_file: open " + missingKeyFile + ": no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.yaml)
			for _, cmd := range []string{"validate", "serve"} {
				ctx, cancel := context.WithCancel(context.Background())
				cancel() // a serve that wrongly started stops at once
				var out, errb bytes.Buffer
				code := run(ctx, []string{cmd, "--config", path}, &out, &errb)
				if code != 1 {
					t.Errorf("router %s: got exit %d, want 1; stderr:\n%s", cmd, code, errb.String())
				}
				if got := problemLines(errb.String()); !slices.Contains(got, tt.want) {
					t.Errorf("router %s: got stderr lines\n  %s\nwant the line\n  %s", cmd, strings.Join(got, "\n  "), tt.want)
				}
			}
		})
	}
}

// TestValidateReportsEveryProblem: one run of router validate names every
// fault of a file, one per line, each with its key and bad value.
func TestValidateReportsEveryProblem(t *testing.T) {
	t.Setenv("TEST_ROUTER_KEY", "sk-test")
	yaml := `
listen: nope
limits: {request_timeout: soon}
log: {level: loud}
providers:
  - name: az
    type: azure
    base_url: https://r.openai.azure.com/openai
    api_key_env: TEST_ROUTER_UNSET_KEY
    timeout: 10x
    azure: {api_version: soon}
    azre: {}
  - {name: x, type: openia, rpm: -1}
  - {name: sim, type: simulated, simulated: {failure_rate: 2, latency: -1s}}
models:
  - name: m
    targets:
      - {provider: nobody, model: a}
      - {provider: sim, model: "", tier: -1}
  - name: m
    targets: [{provider: sim, model: b}]
`
	path := writeConfig(t, yaml)
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"validate", "--config", path}, &out, &errb); code != 1 {
		t.Fatalf("got exit %d, want 1; stderr:\n%s", code, errb.String())
	}
	want := []string{
		`limits.request_timeout: must be a duration such as 30s or 250ms, got "soon"`,
		`listen: must be host:port, got "nope"`,
		`log.level: must be debug, info, warn or error, got "loud"`,
		`models[0].targets[0].provider: no provider named "nobody"`,
		"models[0].targets[1].model: must not be empty",
		"models[0].targets[1].tier: must not be negative, got -1",
		`models[1].name: duplicate model "m"`,
		"providers[0].api_key_env: environment variable TEST_ROUTER_UNSET_KEY is unset or empty",
		"unknown key providers[0].azre",
		`providers[0].azure.api_version: "soon" is neither "v1" nor a date like "2024-10-21" (optionally with -preview)`,
		`providers[0].base_url: "https://r.openai.azure.com/openai": give scheme://host only for azure, the adapter appends the /openai path`,
		`providers[0].timeout: must be a duration such as 30s or 250ms, got "10x"`,
		"providers[1].rpm: must not be negative, got -1",
		`providers[1].type: must be one of openai, azure, anthropic, gemini, bedrock, vertex, openai_compatible, simulated, got "openia"`,
		"providers[2].simulated.failure_rate: must be between 0 and 1, got 2",
		"providers[2].simulated.latency: must not be negative, got -1s",
	}
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	if head := "router validate: config " + path + " has 16 problems:"; lines[0] != head {
		t.Errorf("got first line %q, want %q", lines[0], head)
	}
	var got []string
	for _, l := range lines[1:] {
		got = append(got, strings.TrimSpace(l))
	}
	if !slices.Equal(got, want) {
		t.Errorf("got problems\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if out.Len() != 0 {
		t.Errorf("got stdout %q, want nothing for an invalid file", out.String())
	}
}

func TestHelp(t *testing.T) {
	everything := []string{"serve", "validate", "status", "version", "help", "--config FILE", "--admin URL", "LLMROUTER_"}
	tests := []struct {
		args []string
		code int
		want []string // in stdout (code 0) or stderr
	}{
		{[]string{"--help"}, 0, everything},
		{[]string{"-h"}, 0, everything},
		{[]string{"-help"}, 0, everything},
		{[]string{"help"}, 0, everything},
		{[]string{"--config", "/nonexistent.yaml", "--help"}, 0, everything},
		{[]string{"serve", "--help"}, 0, []string{"usage: router serve [--config FILE]", "-config FILE"}},
		{[]string{"validate", "-h"}, 0, []string{"usage: router validate [--config FILE]", "-config FILE"}},
		{[]string{"status", "--help"}, 0, []string{"usage: router status [--admin URL]", "-admin URL", "http://127.0.0.1:9090"}},
		{[]string{"version", "--help"}, 0, []string{"usage: router version\n"}},
		{[]string{"help", "--help"}, 0, []string{"usage: router help [COMMAND]"}},
		{[]string{"help", "validate"}, 0, []string{"usage: router validate [--config FILE]", "-config FILE"}},
		{[]string{"help", "frobnicate"}, 2, []string{`unknown command "frobnicate"`}},
		{[]string{"serve", "--bogus"}, 2, []string{"flag provided but not defined: -bogus", "usage: router serve"}},
		{[]string{"validate", "extra"}, 2, []string{`router validate: unexpected argument "extra"`}},
		{[]string{"status", "extra"}, 2, []string{`router status: unexpected argument "extra"`}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), tt.args, &out, &errb)
			if code != tt.code {
				t.Fatalf("got exit %d, want %d; stderr:\n%s", code, tt.code, errb.String())
			}
			got := out.String()
			if tt.code != 0 {
				got = errb.String()
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("got\n%s\nwant it to contain %q", got, w)
				}
			}
		})
	}
}

// TestUnknownEnvWarns: an LLMROUTER_ variable that sets no key is a warning
// in validate and at start-up; the variables the config names are not.
func TestUnknownEnvWarns(t *testing.T) {
	t.Setenv("LLMROUTER_LISTN", "0.0.0.0:8080")
	t.Setenv("LLMROUTER_API_KEYS", "client-key") // named by auth.api_keys_env
	t.Setenv("LLMROUTER_TEST_SIM_KEY", "k")      // named by api_key_env
	yaml := "providers: [{name: p, type: simulated, api_key_env: LLMROUTER_TEST_SIM_KEY}]\n" + oneModel

	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"validate", "--config", writeConfig(t, yaml)}, &out, &errb); code != 0 {
		t.Fatalf("validate: got exit %d, want 0; stderr:\n%s", code, errb.String())
	}
	want := "router validate: warning: environment variable LLMROUTER_LISTN overrides no config key; ignored\n"
	if got := errb.String(); got != want {
		t.Errorf("validate: got stderr %q, want %q", got, want)
	}

	d, path, logs := startFile(t, yaml)
	d.Shutdown()
	var warned []string
	served := map[string]any{}
	for _, l := range strings.Split(logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(l), &rec) != nil {
			continue
		}
		switch {
		case rec["level"] == "WARN":
			warned = append(warned, rec["msg"].(string))
		case rec["msg"] == "serving":
			served = rec
		}
	}
	if want := []string{"environment variable LLMROUTER_LISTN overrides no config key; ignored"}; !slices.Equal(warned, want) {
		t.Errorf("start-up: got warnings %q, want %q", warned, want)
	}
	if served["config"] != path {
		t.Errorf("start-up: got serving line %v, want config %q", served, path)
	}
}

// syncBuffer is a log sink safe for the daemon's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// startFile writes yaml to a config file and starts the daemon on it as
// serve does, logging JSON lines.
func startFile(t *testing.T, yaml string) (*daemon.Daemon, string, *syncBuffer) {
	t.Helper()
	path := writeConfig(t, yaml)
	t.Setenv("LLMROUTER_LISTEN", "127.0.0.1:0")
	t.Setenv("LLMROUTER_ADMIN_LISTEN", "127.0.0.1:0")
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	d, err := daemon.Start(cfg, path, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		daemon.Options{Types: providerTypes, Version: version})
	if err != nil {
		t.Fatal(err)
	}
	return d, path, logs
}

// TestProviderTypes: the binary's list names each type once, and each
// builds from a minimal entry.
func TestProviderTypes(t *testing.T) {
	t.Setenv("TEST_ROUTER_KEY", "sk-test")
	seen := map[string]bool{}
	for _, typ := range providerTypes {
		if typ.Name == "" || seen[typ.Name] || typ.Build == nil {
			t.Errorf("type %q: got a duplicate, empty name or no Build", typ.Name)
		}
		seen[typ.Name] = true
		base := ""
		if typ.Name == "azure" || typ.Name == "openai_compatible" {
			base = ", base_url: http://127.0.0.1:1/v1"
			if typ.Name == "azure" {
				base = ", base_url: http://127.0.0.1:1"
			}
		}
		entry := "api_key_env: TEST_ROUTER_KEY" + base
		switch typ.Name {
		case "bedrock":
			entry = "bedrock: {region: us-east-1}" // signed with AWS credentials, no key
		case "vertex":
			entry = "vertex: {project: my-project, region: global}" // OAuth2 tokens, no key
		}
		yaml := "providers: [{name: p, type: " + typ.Name + ", " + entry + "}]\n" + oneModel
		var out, errb bytes.Buffer
		if code := run(context.Background(), []string{"validate", "--config", writeConfig(t, yaml)}, &out, &errb); code != 0 {
			t.Errorf("type %s: got exit %d, want 0; stderr:\n%s", typ.Name, code, errb.String())
		}
	}
}
