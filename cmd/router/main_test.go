package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/config"
)

func TestValidateCommand(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	typo := filepath.Join(dir, "typo.yaml")
	os.WriteFile(good, []byte("providers: [{name: p, type: simulated}]\nmodels: [{name: m, targets: [{provider: p, model: x, tier: 0}]}]\n"), 0o600)
	os.WriteFile(typo, []byte("providers: [{name: p, type: simulated, max_concurency: 3}]\nmodels: [{name: m, targets: [{provider: p, model: x}]}]\n"), 0o600)
	tests := []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"validate", "--config", good}, 0, "m      0     p         simulated  x", ""},
		{[]string{"validate"}, 0, "config embedded default (simulated providers) is valid", ""},
		{[]string{"validate", "--config", typo}, 1, "", "unknown key providers[0].max_concurency"},
		{[]string{"validate", "--config", filepath.Join(dir, "missing.yaml")}, 1, "", "no such file"},
		{[]string{"version"}, 0, "llmrouter dev", ""},
		{[]string{"frobnicate"}, 2, "", "unknown command"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), tt.args, &out, &errb)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, tt.code, errb.String())
			}
			if !strings.Contains(out.String(), tt.out) {
				t.Errorf("stdout %q lacks %q", out.String(), tt.out)
			}
			if !strings.Contains(errb.String(), tt.err) {
				t.Errorf("stderr %q lacks %q", errb.String(), tt.err)
			}
		})
	}
}

func TestExampleConfigsValidate(t *testing.T) {
	files, _ := filepath.Glob("../../configs/examples/*.yaml")
	if len(files) == 0 {
		t.Fatal("no example configs")
	}
	for _, f := range files {
		if _, err := config.Load(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestServeEmbeddedDefault starts the daemon on the embedded default and
// asks it what a fresh user would: a chat completion, streamed and not.
func TestServeEmbeddedDefault(t *testing.T) {
	t.Setenv("LLMROUTER_LISTEN", "127.0.0.1:0")
	t.Setenv("LLMROUTER_ADMIN_LISTEN", "127.0.0.1:0")
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	d, err := start(cfg, "", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	api := "http://" + d.apiLn.Addr().String()
	admin := "http://" + d.adminLn.Addr().String()
	for _, body := range []string{
		`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}]}`,
		`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hello"}]}`,
	} {
		resp, err := http.Post(api+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), "You said:") && !strings.Contains(string(b), "said: ") {
			t.Errorf("status %d body %s", resp.StatusCode, b)
		}
	}
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 200, "/admin/providers": 200} {
		resp, err := http.Get(admin + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	if code := d.shutdown(); code != 0 {
		t.Errorf("shutdown exit %d", code)
	}
	if _, err := http.Get(api + "/v1/models"); err == nil {
		t.Error("API still accepting after shutdown")
	}
}

// TestCorruptStateFileIsSurvived: a corrupt state file is a warning and a
// fresh start; shutdown writes a good one.
func TestCorruptStateFileIsSurvived(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	os.WriteFile(path, []byte("{not json"), 0o600)
	t.Setenv("LLMROUTER_LISTEN", "127.0.0.1:0")
	t.Setenv("LLMROUTER_ADMIN_LISTEN", "127.0.0.1:0")
	t.Setenv("LLMROUTER_STATE_FILE", path)
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	d, err := start(cfg, "", slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatalf("start with a corrupt state file: %v", err)
	}
	resp, err := http.Post("http://"+d.apiLn.Addr().String()+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("serving after a corrupt state file: %v %v", err, resp)
	}
	resp.Body.Close()
	d.shutdown()
	if !strings.Contains(logs.String(), "ignoring state file") {
		t.Errorf("no warning about the corrupt file in logs:\n%s", logs.String())
	}
	b, _ := os.ReadFile(path)
	if !bytes.Contains(b, []byte(`"providers"`)) || !bytes.Contains(b, []byte(`"sim-a"`)) {
		t.Errorf("shutdown did not save state: %s", b)
	}
}
