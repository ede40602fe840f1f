package proxy

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
)

// TestLogRequestedModel: the request log line names the configured entry
// that matched (model: a pattern's name) and the model as the client
// sent it (requested_model), cut to 256 bytes at a character's start;
// a model not configured logs what was asked, model empty (issue 34,
// item 5).
func TestLogRequestedModel(t *testing.T) {
	table, err := route.NewTable([]route.ModelConfig{{Name: "claude-*", Targets: []route.Target{{Provider: "p", Model: "p-model"}}}})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	s, err := Open(routing.Options{Providers: []provider.Descriptor{{Name: "p", Type: "fake", Adapter: &fake{do: ok(`{"ok":true}`)}}}, Models: table,
		Limits: limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: 10 * time.Second}, ClientKeys: []string{"anon"},
		Logger: slog.New(slog.NewJSONHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	h := s.Handler()
	long := "claude-" + strings.Repeat("é", 200) // 407 bytes
	for _, tt := range []struct {
		name, model, wantModel, wantRequested string
		status                                int
	}{
		{"a pattern", "claude-opus-5-5", "claude-*", "claude-opus-5-5", 200},
		{"cut at a character", long, "claude-*", long[:255], 200},
		{"not configured", "gpt-9", "", "gpt-9", 404},
	} {
		t.Run(tt.name, func(t *testing.T) {
			log.Reset()
			body := `{"model":"` + tt.model + `","messages":[{"role":"user","content":"hi"}]}`
			if w := do(h, "POST", "/v1/chat/completions", "application/json", body, "Authorization", "Bearer anon"); w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body)
			}
			var line struct {
				Msg, Model string
				Requested  *string `json:"requested_model"`
			}
			for l := range strings.Lines(log.String()) {
				if json.Unmarshal([]byte(l), &line) == nil && line.Msg == "request" {
					break
				}
			}
			if line.Msg != "request" || line.Requested == nil {
				t.Fatalf("no request line with requested_model in the log:\n%s", log.String())
			}
			if line.Model != tt.wantModel || *line.Requested != tt.wantRequested {
				t.Errorf("model %q, requested_model %q (%d bytes), want %q, %q", line.Model, *line.Requested, len(*line.Requested), tt.wantModel, tt.wantRequested)
			}
		})
	}
}
