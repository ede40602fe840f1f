package daemon

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/config"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/openai"
	"github.com/llmrouter/llmrouter/internal/provider/simulated"
)

// testOptions serve the provider types these tests configure.
var testOptions = Options{Types: provider.Types{simulated.Type, openai.CompatibleType}, Version: "dev"}

// TestServeEmbeddedDefault starts the daemon on the embedded default and
// asks it what a fresh user would: a chat completion, streamed and not.
func TestServeEmbeddedDefault(t *testing.T) {
	t.Setenv("LLMROUTER_LISTEN", "127.0.0.1:0")
	t.Setenv("LLMROUTER_ADMIN_LISTEN", "127.0.0.1:0")
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	d, err := start(cfg, "", slog.New(slog.DiscardHandler), testOptions)
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
	if code := d.Shutdown(); code != 0 {
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
	d, err := start(cfg, "", slog.New(slog.NewTextHandler(&logs, nil)), testOptions)
	if err != nil {
		t.Fatalf("start with a corrupt state file: %v", err)
	}
	resp, err := http.Post("http://"+d.apiLn.Addr().String()+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("serving after a corrupt state file: %v %v", err, resp)
	}
	resp.Body.Close()
	d.Shutdown()
	if !strings.Contains(logs.String(), "ignoring state file") {
		t.Errorf("no warning about the corrupt file in logs:\n%s", logs.String())
	}
	b, _ := os.ReadFile(path)
	if !bytes.Contains(b, []byte(`"providers"`)) || !bytes.Contains(b, []byte(`"sim-a"`)) {
		t.Errorf("shutdown did not save state: %s", b)
	}
}

func TestServingLogNamesEmbeddedDefault(t *testing.T) {
	t.Setenv("LLMROUTER_LISTEN", "127.0.0.1:0")
	t.Setenv("LLMROUTER_ADMIN_LISTEN", "127.0.0.1:0")
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	d, err := start(cfg, "", slog.New(slog.NewJSONHandler(logs, nil)), testOptions)
	if err != nil {
		t.Fatal(err)
	}
	d.Shutdown()
	if want := `"msg":"serving"`; !strings.Contains(logs.String(), want) {
		t.Fatalf("got logs\n%s\nwant a line with %s", logs.String(), want)
	}
	if want := `"config":"embedded default (simulated providers)"`; !strings.Contains(logs.String(), want) {
		t.Errorf("got logs\n%s\nwant the serving line to carry %s", logs.String(), want)
	}
}
