package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"
)

// echoFake is an Anthropic-format provider that quotes client input in
// its 400s the way Anthropic does (issue 31): an unknown anthropic-beta
// value ("Unexpected value(s) `x` for the `anthropic-beta` header…") and
// an unknown content block's tag ("Input tag 'x' found using 'type'…").
// Its answer to everything is answer when set (an account out of credit,
// say), else a message.
type echoFake struct {
	srv    *httptest.Server
	name   string
	answer func() (int, string) // nil: serve

	mu       sync.Mutex // guards requests, checks
	requests int        // POST /v1/messages, the router's checks included
	checks   int        // of which the router's own minimal requests
}

// knownBetas are the betas the fake knows; any other is quoted back.
var knownBetas = []string{"interleaved-thinking-2025-05-14", "claude-code-20250219"}

func newEchoFake(t *testing.T, name string, answer func() (int, string)) *echoFake {
	f := &echoFake{name: name, answer: answer}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func anthropicErr(typ, msg string) string {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"})
	return string(b)
}

func (f *echoFake) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodGet { // the breaker's probe
		_, _ = io.WriteString(w, `{"data":[],"has_more":false}`)
		return
	}
	body, _ := io.ReadAll(r.Body)
	check := gjson.GetBytes(body, "max_tokens").Int() == 1 && gjson.GetBytes(body, "messages.0.content").Str == "hi" &&
		r.Header.Get("Anthropic-Beta") == ""
	f.mu.Lock()
	f.requests++
	if check {
		f.checks++
	}
	f.mu.Unlock()
	status, answer := http.StatusOK, ""
	for v := range strings.SplitSeq(r.Header.Get("Anthropic-Beta"), ",") {
		if v = strings.TrimSpace(v); v != "" && !slices.Contains(knownBetas, v) {
			status, answer = 400, anthropicErr("invalid_request_error", "Unexpected value(s) `"+v+
				"` for the `anthropic-beta` header. Please consult our documentation at docs.anthropic.com or try again without the header.")
		}
	}
	if tag := gjson.GetBytes(body, "messages.0.content.0.type").Str; status == 200 && tag != "" && tag != "text" {
		status, answer = 400, anthropicErr("invalid_request_error", "messages.0.content.0: Input tag '"+tag+
			"' found using 'type' does not match any of the expected tags: 'document', 'image', 'text', 'thinking', 'tool_result', 'tool_use'")
	}
	if status == 200 && f.answer != nil {
		status, answer = f.answer()
	}
	if status == 200 {
		answer = `{"id":"msg_1","type":"message","role":"assistant","model":"model-of-` + f.name +
			`","content":[{"type":"text","text":"from ` + f.name + `"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":2}}`
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, answer)
}

// counts are the fake's POST /v1/messages and, of those, the router's
// own minimal requests.
func (f *echoFake) counts() (requests, checks int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests, f.checks
}

// echoConfig is a router over fakes with anthropic-type providers and
// models, each a list of "provider:tier".
func echoConfig(fakes []*echoFake, models map[string][]string) binConfig {
	return binConfig{custom: func() string {
		var b strings.Builder
		b.WriteString("log: {level: info, format: text}\nlimits: {request_timeout: 30s}\nauth: {api_keys_env: \"\"}\n")
		b.WriteString("routing:\n  retry: {max_attempts: 3, initial_backoff: 10ms, max_backoff: 50ms, multiplier: 2.0, jitter: 0.5}\n")
		b.WriteString("providers:\n")
		for _, f := range fakes {
			fmt.Fprintf(&b, "  - {name: %s, type: anthropic, base_url: %s, api_key_env: %s}\n", f.name, f.srv.URL, anthropicKeyEnv)
		}
		b.WriteString("models:\n")
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range models {
				if !yield(k) {
					return
				}
			}
		}) {
			fmt.Fprintf(&b, "  - name: %s\n    targets:\n", name)
			for _, tg := range models[name] {
				p, tier, _ := strings.Cut(tg, ":")
				fmt.Fprintf(&b, "      - {provider: %s, model: model-of-%s, tier: %s}\n", p, p, tier)
			}
		}
		return b.String()
	}}
}

// echoBody is a Messages request for model whose first block is of type
// tag.
func echoBody(model, tag string) string {
	return `{"model":"` + model + `","max_tokens":16,"messages":[{"role":"user","content":[{"type":"` + tag + `","text":"hi there"}]}]}`
}

// adminOf is provider name's row of /admin/providers.
func adminOf(t *testing.T, p *routerProc, name string) adminState {
	t.Helper()
	ps, err := p.providers()
	if err != nil {
		t.Fatalf("/admin/providers: %v", err)
	}
	for _, s := range ps {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("/admin/providers has no %s: %+v", name, ps)
	return adminState{}
}

// testBinaryEchoes (issue 31, finding 1): a provider's error that quotes
// a client's input never takes the provider out for the other clients
// (docs/ARCHITECTURE.md, "Classification").
//
// Hostile: provider A alone serves model m. An anthropic-beta of "credit
// balance" is refused by the router (400 naming the header), and A never
// sees it. A block whose type is "credit balance" passes the router's
// checks; A quotes the tag in its 400, which reads like Anthropic's
// out-of-credit answer: the router checks with one minimal request of
// its own, which A serves, so the client gets A's 400 as it came, the
// next client is served, /admin/providers shows A not out of quota, and
// five more such requests cost A no further check.
//
// Genuine: provider Q answers everything, the router's check included,
// "Your credit balance is too low", and provider P answers 402
// billing_error; each is tier 0 of a model whose tier 1 is B. The
// credit-balance answer is confirmed by the check and P's believed at
// once: both requests fail over to B, both providers are out of quota on
// /admin/providers, and the next requests go to B without asking them.
func testBinaryEchoes(t *testing.T, bin string) {
	t.Run("hostile", func(t *testing.T) {
		a := newEchoFake(t, "A", nil)
		p := startRouter(t, bin, echoConfig([]*echoFake{a}, map[string][]string{"m": {"A:0"}}))
		rep, err := sendMessages(p.client, p.api+"/v1/messages", echoBody("m", "text"), "credit balance")
		if err != nil {
			t.Fatal(err)
		}
		if typ, msg := gjson.GetBytes(rep.body, "error.type").Str, gjson.GetBytes(rep.body, "error.message").Str; rep.status != 400 ||
			typ != "invalid_request_error" || !strings.HasPrefix(msg, "anthropic-beta: ") {
			t.Errorf("a bad beta: got %d %s, want 400 invalid_request_error naming anthropic-beta", rep.status, rep.body)
		}
		if n, _ := a.counts(); n != 0 {
			t.Errorf("a bad beta reached the provider %d times, want never", n)
		}

		for i := range 6 {
			rep, err = sendMessages(p.client, p.api+"/v1/messages", echoBody("m", "credit balance"), "")
			if err != nil {
				t.Fatal(err)
			}
			if rep.status != 400 || !strings.Contains(string(rep.body), "Input tag 'credit balance'") {
				t.Fatalf("hostile block %d: got %d %s, want A's 400 quoting the tag", i+1, rep.status, rep.body)
			}
			rep, err = sendMessages(p.client, p.api+"/v1/messages", echoBody("m", "text"), "claude-code-20250219")
			if err != nil {
				t.Fatal(err)
			}
			if rep.status != 200 || rep.header.Get("X-Llmrouter-Provider") != "A" {
				t.Fatalf("the next client after hostile block %d: got %d %s, want 200 from A", i+1, rep.status, rep.body)
			}
		}
		if s := adminOf(t, p, "A"); s.OutOfQuota || s.State != "closed" || len(s.DisabledTargets) != 0 {
			t.Errorf("/admin/providers shows A %+v, want closed, not out of quota, no target disabled", s)
		}
		if requests, checks := a.counts(); checks != 1 || requests != 13 {
			t.Errorf("A got %d requests, %d of them the router's checks; want 13 and 1 (one check per cooldown.failure)", requests, checks)
		}
		if l := p.stderr.String(); !strings.Contains(l, "confirmed=false") {
			t.Errorf("no log line of the unconfirmed check; output:\n%s", l)
		}
	})

	t.Run("genuine", func(t *testing.T) {
		q := newEchoFake(t, "Q", func() (int, string) {
			return 400, anthropicErr("invalid_request_error", "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.")
		})
		pb := newEchoFake(t, "P", func() (int, string) { return 402, anthropicErr("billing_error", "Your account has a billing problem.") })
		b := newEchoFake(t, "B", nil)
		p := startRouter(t, bin, echoConfig([]*echoFake{q, pb, b}, map[string][]string{"credit": {"Q:0", "B:1"}, "billing": {"P:0", "B:1"}}))
		for _, tt := range []struct {
			model  string
			f      *echoFake
			checks int
		}{{"credit", q, 1}, {"billing", pb, 0}} {
			for i := range 3 {
				rep, err := sendMessages(p.client, p.api+"/v1/messages", echoBody(tt.model, "text"), "")
				if err != nil {
					t.Fatal(err)
				}
				if rep.status != 200 || rep.header.Get("X-Llmrouter-Provider") != "B" {
					t.Fatalf("%s request %d: got %d %s, want 200 from B", tt.model, i+1, rep.status, rep.body)
				}
			}
			if s := adminOf(t, p, tt.f.name); !s.OutOfQuota {
				t.Errorf("/admin/providers shows %s %+v, want out of quota", tt.f.name, s)
			}
			if requests, checks := tt.f.counts(); requests != 1+tt.checks || checks != tt.checks {
				t.Errorf("%s got %d requests, %d of them the router's checks; want %d and %d (then blocked)",
					tt.f.name, requests, checks, 1+tt.checks, tt.checks)
			}
		}
	})
}
