package e2e

import (
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/provider/bedrock/bedrocktest"
)

// bedrockEnv is the router's AWS environment in the Bedrock scenario: the
// fakes' static test keys, and nothing else of the default chain (no
// shared files, the EC2 metadata service off: the router must never reach
// 169.254.169.254 from a test).
func bedrockEnv(t testing.TB) []string {
	dir := t.TempDir()
	return []string{
		"AWS_ACCESS_KEY_ID=" + bedrocktest.AccessKeyID, "AWS_SECRET_ACCESS_KEY=" + bedrocktest.SecretAccessKey,
		"AWS_CONFIG_FILE=" + filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(dir, "none"),
		"AWS_EC2_METADATA_DISABLED=true", "HOME=" + dir,
	}
}

// newBedrockFake starts a fake Bedrock region whose every request must be
// signed for region.
func newBedrockFake(t testing.TB, region string) *bedrocktest.Server {
	f := bedrocktest.New()
	f.Region = region
	t.Cleanup(f.Close)
	return f
}

// throttled answers every Bedrock call with a ThrottlingException (a 429
// without a wait), or, when off is set, as the fake would.
func throttled(on func() bool) func(bedrocktest.Request) bedrocktest.Reply {
	return func(r bedrocktest.Request) bedrocktest.Reply {
		if r.Op != bedrocktest.ListModels && on() {
			return bedrocktest.Reply{Status: http.StatusTooManyRequests, Code: "ThrottlingException", Message: "Too many requests, please wait before trying again."}
		}
		return bedrocktest.Default(r)
	}
}

// testBinaryBedrock: two Bedrock regions (us-east-1 in tier 0, us-west-2
// in tier 1, each a fake that checks every SigV4 signature) and Anthropic
// in tier 2, credentials from the environment. Checked on the binary:
//   - chat, stream, a tool call and the Messages API natively through
//     Bedrock (the invoke body without model, with anthropic_version and
//     the client's betas);
//   - a ConverseStream cut mid-frame ends the client's stream with one
//     error event and no [DONE];
//   - a throttled region fails over to the other region, and when both
//     are throttled to Anthropic; hintless throttling counts towards each
//     region's breaker, which opens after two and keeps the region out of
//     the next requests (docs/ARCHITECTURE.md, "Classification",
//     "Breaker").
func testBinaryBedrock(t *testing.T, bin string) {
	east, west := newBedrockFake(t, "us-east-1"), newBedrockFake(t, "us-west-2")
	anth := newBinFake(t, "anthropic", anthropicAPI)
	const claude = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	var eastThrottled, westThrottled atomic.Bool
	east.Reply, west.Reply = throttled(eastThrottled.Load), throttled(westThrottled.Load)
	p := startRouter(t, bin, binConfig{
		providers: []binProvider{
			{bedrock: east, name: "bedrock-east", typ: "bedrock", tier: 0},
			{bedrock: west, name: "bedrock-west", typ: "bedrock", tier: 1},
			{fake: anth, typ: "anthropic", tier: 2},
		},
		models: []binModel{{name: "claude", targets: []binTarget{
			{provider: "bedrock-east", model: claude, tier: 0},
			{provider: "bedrock-west", model: claude, tier: 1},
			{provider: "anthropic", model: "model-of-anthropic", tier: 2},
		}}},
		breaker: "failure_threshold: {consecutive: 2, ratio: 0}\n" +
			"cooldown: {failure: 60s, rate_limit: 60s, timeout: 60s, multiplier: 1, max: 60s}",
		env: bedrockEnv(t),
	})

	// Chat (Converse) and its stream, through us-east-1.
	for _, stream := range []bool{false, true} {
		rep, err := p.chatOK(stream)
		if err != nil {
			t.Fatalf("chat (stream %v): %v", stream, err)
		}
		if got := rep.header.Get("X-LLMRouter-Provider"); got != "bedrock-east" {
			t.Errorf("chat (stream %v) served by %q", stream, got)
		}
		if !strings.Contains(string(rep.body), "hello from ") {
			t.Errorf("chat (stream %v): %s", stream, rep.body)
		}
	}

	// A tool call through Converse.
	east.Reply = func(r bedrocktest.Request) bedrocktest.Reply {
		if r.Op == bedrocktest.Converse && strings.Contains(string(r.Body), `"toolConfig"`) {
			return bedrocktest.Reply{JSON: `{"output":{"message":{"role":"assistant","content":[{"toolUse":{"toolUseId":"tooluse_1",` +
				`"name":"get_weather","input":{"city":"Oslo"}}}]}},"stopReason":"tool_use","usage":{"inputTokens":20,"outputTokens":5}}`}
		}
		return bedrocktest.Default(r)
	}
	status, _, body := postChatBody(t, p, toolChat("m", false))
	if status != http.StatusOK || gjson.Get(body, "choices.0.message.tool_calls.0.function.arguments").Str != `{"city":"Oslo"}` ||
		gjson.Get(body, "choices.0.finish_reason").Str != "tool_calls" {
		t.Errorf("tool call: got %d %s", status, body)
	}
	east.Reply = throttled(eastThrottled.Load)

	// The Messages API natively, whole and streamed.
	msg := `{"model":"claude","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
	var h http.Header
	status, h, body = postMessages(t, p, msg, "prompt-caching-2024-07-31")
	if status != http.StatusOK || h.Get("X-LLMRouter-Provider") != "bedrock-east" || gjson.Get(body, "id").Str != "msg_bdrk_1" {
		t.Errorf("messages: got %d from %q: %s", status, h.Get("X-LLMRouter-Provider"), body)
	}
	status, _, body = postMessages(t, p, strings.Replace(msg, `"max_tokens"`, `"stream":true,"max_tokens"`, 1), "")
	if status != http.StatusOK || !strings.Contains(body, "event: message_stop") || !strings.Contains(body, "hello from "+claude) {
		t.Errorf("messages stream: got %d:\n%s", status, body)
	}
	var invokes []bedrocktest.Request
	for _, r := range east.Requests() {
		if r.Op == bedrocktest.Invoke || r.Op == bedrocktest.InvokeStream {
			invokes = append(invokes, r)
		}
	}
	if len(invokes) != 2 || invokes[0].Model != claude ||
		string(invokes[0].Body) != `{"anthropic_version":"bedrock-2023-05-31","anthropic_beta":["prompt-caching-2024-07-31"],"max_tokens":64,"messages":[{"role":"user","content":"hi"}]}` ||
		invokes[1].Op != bedrocktest.InvokeStream || strings.Contains(string(invokes[1].Body), `"stream"`) {
		t.Errorf("invoke calls: %+v", invokes)
	}

	// A ConverseStream cut after its first content: one error event.
	east.Reply = func(r bedrocktest.Request) bedrocktest.Reply {
		rp := bedrocktest.Default(r)
		rp.CutAfter = 3
		return rp
	}
	rep, err := p.chat(true)
	if err != nil {
		t.Fatal(err)
	}
	if class, err := check(&rep, true); class != streamError || err != nil {
		t.Errorf("cut stream: got %s (%v):\n%s", class, err, rep.body)
	}
	east.Reply = throttled(eastThrottled.Load)
	// A whole answer: the cut's failure no longer counts as consecutive.
	if _, err := p.chatOK(false); err != nil {
		t.Fatal(err)
	}

	// Regional failover, then to Anthropic; the breakers open, each after
	// its second throttled call.
	eastThrottled.Store(true)
	for i := range 2 {
		status, h, _ := postMessages(t, p, msg, "")
		if status != http.StatusOK || h.Get("X-LLMRouter-Provider") != "bedrock-west" || h.Get("X-LLMRouter-Attempts") != "2" {
			t.Errorf("east throttled, request %d: got %d from %q after %s attempts", i, status, h.Get("X-LLMRouter-Provider"), h.Get("X-LLMRouter-Attempts"))
		}
	}
	westThrottled.Store(true)
	before := len(east.Requests())
	for i := range 2 {
		status, h, body := postMessages(t, p, msg, "")
		if status != http.StatusOK || h.Get("X-LLMRouter-Provider") != "anthropic" {
			t.Errorf("both throttled, request %d: got %d from %q: %s", i, status, h.Get("X-LLMRouter-Provider"), body)
		}
	}
	if n := len(east.Requests()) - before; n != 0 {
		t.Errorf("us-east-1 got %d calls with its breaker open", n)
	}
	states := map[string]string{}
	provs, err := p.providers()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range provs {
		states[s.Name] = s.State
	}
	if states["bedrock-east"] != "open" || states["bedrock-west"] != "open" || states["anthropic"] != "closed" {
		t.Errorf("breakers: got %v", states)
	}
	for _, f := range []*bedrocktest.Server{east, west} {
		if rej := f.Rejected(); len(rej) != 0 {
			t.Errorf("%s refused signatures: %v", f.Region, rej)
		}
	}
	p.stop()
}

// postMessages sends a Messages request through the router (beta, when
// not empty, as anthropic-beta) and reads the whole answer.
func postMessages(t testing.TB, p *routerProc, body, beta string) (int, http.Header, string) {
	t.Helper()
	rep, err := sendMessages(p.client, p.api+"/v1/messages", body, beta)
	if err != nil {
		t.Fatal(err)
	}
	return rep.status, rep.header, string(rep.body)
}
