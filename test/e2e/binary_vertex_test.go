package e2e

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/provider/vertex/vertextest"
)

// toolChat is a chat request for model with one function the client
// requires the model to call.
func toolChat(model string, stream bool) string {
	s := ""
	if stream {
		s = `"stream":true,`
	}
	return `{"model":"` + model + `",` + s + `"messages":[{"role":"user","content":"weather in Oslo?"}],` +
		`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],"tool_choice":"required"}`
}

// postChatBody sends a chat completion with body through the router and
// reads the whole answer.
func postChatBody(t testing.TB, p *routerProc, body string) (int, http.Header, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.api+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// testBinaryVertex: Vertex AI (a fake whose API takes only tokens its
// token endpoint minted for the test service account's verified JWT, one
// minute long so that every call needs a fresh one) in tier 0, Anthropic
// in tier 1; credentials from a service-account key file
// (GOOGLE_APPLICATION_CREDENTIALS). Checked on the binary: Gemini chat,
// stream and a tool call through generateContent; Claude through the
// Messages API natively (rawPredict with vertex-2023-10-16, the betas as
// the anthropic-beta header)
// and through chat; the token refreshed before it expires and never
// refused.
func testBinaryVertex(t *testing.T, bin string) {
	vx := vertextest.New()
	t.Cleanup(vx.Close)
	vx.TokenLifetime = time.Minute
	key, err := vx.WriteKeyFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	anth := newBinFake(t, "anthropic", anthropicAPI)
	const claude = "claude-sonnet-4-5@20250929"
	vx.Reply = func(r vertextest.Request) vertextest.Reply {
		if r.Method == "generateContent" && strings.Contains(string(r.Body), `"functionDeclarations"`) {
			return vertextest.Reply{Body: `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Oslo"}}}]},` +
				`"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":20,"candidatesTokenCount":5,"totalTokenCount":25}}`}
		}
		return vertextest.Default(r)
	}
	dir := t.TempDir()
	p := startRouter(t, bin, binConfig{
		providers: []binProvider{
			{vertex: vx, name: "vertex", typ: "vertex", tier: 0},
			{fake: anth, typ: "anthropic", tier: 1},
		},
		models: []binModel{{name: "claude", targets: []binTarget{
			{provider: "vertex", model: claude, tier: 0},
			{provider: "anthropic", model: "model-of-anthropic", tier: 1},
		}}},
		env: []string{"GOOGLE_APPLICATION_CREDENTIALS=" + key, "HOME=" + dir, "CLOUDSDK_CONFIG=" + dir,
			"GCE_METADATA_HOST=127.0.0.1:1", "GCE_METADATA_IP=127.0.0.1:1"},
	})

	for _, stream := range []bool{false, true} {
		rep, err := p.chatOK(stream)
		if err != nil {
			t.Fatalf("chat (stream %v): %v", stream, err)
		}
		if got := rep.header.Get("X-LLMRouter-Provider"); got != "vertex" || !strings.Contains(string(rep.body), "hello from") {
			t.Errorf("chat (stream %v) from %q: %s", stream, got, rep.body)
		}
	}
	status, _, body := postChatBody(t, p, toolChat("m", false))
	if status != http.StatusOK || gjson.Get(body, "choices.0.message.tool_calls.0.function.name").Str != "get_weather" ||
		gjson.Get(body, "choices.0.finish_reason").Str != "tool_calls" {
		t.Errorf("tool call: got %d %s", status, body)
	}

	status, h, body := postMessages(t, p, `{"model":"claude","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`, "context-1m-2025-08-07")
	if status != http.StatusOK || h.Get("X-LLMRouter-Provider") != "vertex" || gjson.Get(body, "id").Str != "msg_vrtx_1" {
		t.Errorf("messages: got %d from %q: %s", status, h.Get("X-LLMRouter-Provider"), body)
	}
	status, _, body = postMessages(t, p, `{"model":"claude","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "")
	if status != http.StatusOK || !strings.Contains(body, "event: message_stop") {
		t.Errorf("messages stream: got %d:\n%s", status, body)
	}
	status, _, body = postChatBody(t, p, `{"model":"claude","messages":[{"role":"user","content":"hi"}]}`)
	if status != http.StatusOK || gjson.Get(body, "choices.0.message.content").Str != "hello from "+claude {
		t.Errorf("chat for claude: got %d %s", status, body)
	}
	var raw []vertextest.Request
	for _, r := range vx.Requests() {
		if strings.HasSuffix(r.Method, "awPredict") {
			raw = append(raw, r)
		}
	}
	if len(raw) != 3 || raw[0].Model != claude ||
		string(raw[0].Body) != `{"anthropic_version":"vertex-2023-10-16","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}` ||
		raw[0].Header.Get("Anthropic-Beta") != "context-1m-2025-08-07" ||
		raw[1].Method != "streamRawPredict" {
		t.Errorf("rawPredict calls: %+v", raw)
	}
	if calls := len(vx.Requests()); vx.Refused() != 0 || vx.Minted() != calls {
		t.Errorf("tokens: %d minted for %d calls, %d refused; want one fresh token per call, none refused", vx.Minted(), calls, vx.Refused())
	}
	p.stop()
}
