package e2e

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// testBinaryOutputLimits: a target's max_output_tokens (docs/ARCHITECTURE.md,
// "Output limits") in front of fakes whose models refuse a larger limit
// with a 400, as gpt-4o refuses max_tokens above 16384: Claude Code's
// Messages requests (max_tokens 64000) routed by `claude-*` onto an OpenAI
// target, a chat client's onto a smaller Claude, natively and translated,
// each get a whole answer, and the provider saw the cap; a limit under
// the cap reaches it unchanged; without a cap the provider's 400 is the
// client's answer.
func testBinaryOutputLimits(t *testing.T, bin string) {
	gpt := newBinFake(t, "gpt4o", openaiAPI)
	gpt.setMaxOutput(16384)
	claude := newBinFake(t, "claude35", anthropicAPI)
	claude.setMaxOutput(8192)
	p := startRouter(t, bin, binConfig{
		providers: []binProvider{{fake: gpt, typ: "openai", tier: 0}, {fake: claude, typ: "anthropic", tier: 1}},
		models: []binModel{
			{name: "claude-*", targets: []binTarget{{provider: gpt.name, model: "gpt-4o", maxOutput: 16384}}},
			{name: "gpt-4o", targets: []binTarget{{provider: gpt.name, model: "gpt-4o", maxOutput: 16384}}},
			{name: "claude-3-5-sonnet", targets: []binTarget{{provider: claude.name, model: "claude-3-5-sonnet-20241022", maxOutput: 8192}}},
		},
		logLevel: "debug",
	})
	defer p.stop()

	messages := func(model string, maxTokens int, stream bool) string {
		b := `{"model":"` + model + `","max_tokens":` + strconv.Itoa(maxTokens) +
			`,"system":"You are Claude Code.","messages":[{"role":"user","content":"hi"}]`
		if stream {
			b += `,"stream":true`
		}
		return b + "}"
	}
	last := func(f *binFake) int64 {
		l := f.limits()
		if len(l) == 0 {
			return -1
		}
		return l[len(l)-1]
	}
	for _, tt := range []struct {
		name      string
		model     string
		maxTokens int
		stream    bool
		to        *binFake
		want      int64
	}{
		{"claude code onto gpt-4o", "claude-sonnet-4-5-20250929", 64000, false, gpt, 16384},
		{"claude code onto gpt-4o, streamed", "claude-opus-4-1", 128000, true, gpt, 16384},
		{"under the cap", "claude-haiku-4-5", 1024, false, gpt, 1024},
		{"natively onto a smaller claude", "claude-3-5-sonnet", 32000, false, claude, 8192},
		{"natively onto a smaller claude, streamed", "claude-3-5-sonnet", 32000, true, claude, 8192},
	} {
		t.Run("messages/"+tt.name, func(t *testing.T) {
			rep, err := sendMessages(p.client, p.api+"/v1/messages?beta=true", messages(tt.model, tt.maxTokens, tt.stream), "claude-code-20250219")
			if err != nil {
				t.Fatal(err)
			}
			class, _, err := checkMessages(rep, tt.stream)
			if err != nil || (class != completion && class != streamDone) {
				t.Fatalf("got a %s (%v), status %d, want a whole Messages answer: %s", class, err, rep.status, rep.body)
			}
			if who := rep.header.Get("X-LLMRouter-Provider"); who != tt.to.name || attempts(rep) != 1 {
				t.Errorf("served by %q after %d attempts, want %s after 1", who, attempts(rep), tt.to.name)
			}
			if got := last(tt.to); got != tt.want {
				t.Errorf("%s was asked for %d output tokens, want %d", tt.to.name, got, tt.want)
			}
		})
	}
	for _, tt := range []struct {
		name, body string
		to         *binFake
		want       int64
	}{
		{"max_completion_tokens onto gpt-4o", `{"model":"gpt-4o","max_completion_tokens":100000,"messages":[{"role":"user","content":"hi"}]}`, gpt, 16384},
		{"translated onto a smaller claude", `{"model":"claude-3-5-sonnet","max_tokens":32000,"messages":[{"role":"user","content":"hi"}]}`, claude, 8192},
		{"no limit onto a smaller claude: the default, under the cap", `{"model":"claude-3-5-sonnet","messages":[{"role":"user","content":"hi"}]}`, claude, 4096},
	} {
		t.Run("chat/"+tt.name, func(t *testing.T) {
			status, h, body := postChatBody(t, p, tt.body)
			if status != http.StatusOK || gjson.Get(body, "object").Str != "chat.completion" {
				t.Fatalf("got %d %s, want a chat completion", status, body)
			}
			if who := h.Get("X-LLMRouter-Provider"); who != tt.to.name {
				t.Errorf("served by %q, want %s", who, tt.to.name)
			}
			if got := last(tt.to); got != tt.want {
				t.Errorf("%s was asked for %d output tokens, want %d", tt.to.name, got, tt.want)
			}
		})
	}
	t.Run("without a cap the provider refuses", func(t *testing.T) {
		// Model "m" has both providers as targets, neither capped: the
		// provider's client error is the answer, nothing fails over.
		before := len(claude.limits())
		rep, err := sendMessages(p.client, p.api+"/v1/messages", messages("m", 64000, false), "")
		if err != nil {
			t.Fatal(err)
		}
		if rep.status != http.StatusBadRequest || gjson.GetBytes(rep.body, "error.type").Str != "invalid_request_error" ||
			!strings.Contains(gjson.GetBytes(rep.body, "error.message").Str, "max_tokens is too large") {
			t.Errorf("got %d %s, want gpt-4o's 400 in Anthropic's shape", rep.status, rep.body)
		}
		if got := last(gpt); got != 64000 || len(claude.limits()) != before {
			t.Errorf("gpt4o asked for %d, claude35 called %d times; want 64000 and none", got, len(claude.limits())-before)
		}
	})
	// Each lowered attempt says so at debug, naming the request's limit
	// and the cap.
	var lowered []string
	for line := range strings.Lines(p.stderr.String()) {
		if strings.Contains(line, `msg="output limit lowered"`) {
			lowered = append(lowered, line[strings.Index(line, "provider="):])
		}
	}
	for _, want := range []string{
		"provider=gpt4o model=gpt-4o max_tokens=64000 max_output_tokens=16384",
		"provider=gpt4o model=gpt-4o max_tokens=128000 max_output_tokens=16384",
		"provider=claude35 model=claude-3-5-sonnet-20241022 max_tokens=32000 max_output_tokens=8192",
	} {
		if !slices.ContainsFunc(lowered, func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("no debug line %q among %q", want, lowered)
		}
	}
}
