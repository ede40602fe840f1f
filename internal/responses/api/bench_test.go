package api

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/proxy/proxytest"

	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/anthropic"
	"github.com/llmrouter/llmrouter/internal/provider/openai"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

// The Responses API's paths, each with a real adapter whose HTTP client
// answers in memory: the cost is the router's and the adapter's
// (docs/BENCHMARKS.md, "Every front door's path"). Native goes to an
// openai target's own Responses API, translated onto chat completions to
// an OpenAI-compatible target, anthropic onto chat completions and on to
// an anthropic target's Messages API. The small requests leave store at
// its default (true): each response is stored, as an SDK's are.
const (
	benchReq       = `{"model":"m","max_output_tokens":64,"instructions":"You are terse.","input":"Say hello in five words please."}`
	benchStreamReq = `{"model":"m","max_output_tokens":64,"stream":true,"input":[{"role":"user","content":"Say hello in five words please."}]}`
	respAnswer     = `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-5","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello there, nice to meet.","annotations":[]}]}],"usage":{"input_tokens":20,"output_tokens":6,"total_tokens":26}}`
	chatAnswer     = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there, nice to meet."},"finish_reason":"stop"}],"usage":{"prompt_tokens":20,"completion_tokens":6,"total_tokens":26}}`
	msgAnswer      = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Hello there, nice to meet."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":20,"output_tokens":6}}`
	benchEvents    = 20 // content deltas per stream
)

// Allocation budgets per request of the Responses paths: the counts
// measured when they were last lowered plus 2 (internal/proxy's
// TestAllocationBudgets).
var allocBudgets = map[string]float64{
	"native":                  100,  // measured 98 (101 before one timer a request and the request context in the exchange; 120 before the allocation and request-context rounds of issue 35)
	"native-stream":           232,  // 20 deltas; measured 230 (233 before one timer a request and the request context in the exchange; 250 before the allocation and request-context rounds of issue 35)
	"translated":              116,  // measured 114 (117 before one timer a request and the request context in the exchange; 137 before the allocation and request-context rounds of issue 35)
	"translated-stream":       434,  // 20 deltas; measured 432 (435 before one timer a request and the request context in the exchange; 452 before the allocation and request-context rounds of issue 35)
	"anthropic":               155,  // measured 153 (156 before one timer a request and the request context in the exchange; 174 before the allocation and request-context rounds of issue 35)
	"anthropic-stream":        492,  // 20 deltas; measured 490 (493 before one timer a request and the request context in the exchange; 508 before the allocation and request-context rounds of issue 35)
	"native-codex-stream":     539,  // measured 537 (540 before one timer a request and the request context in the exchange; 557 before the allocation and request-context rounds of issue 35)
	"translated-codex-stream": 1092, // measured 1090 (1093 before one timer a request and the request context in the exchange; 1110 before the allocation and request-context rounds of issue 35)
	"anthropic-codex-stream":  1640, // measured 1638 (1641 before one timer a request and the request context in the exchange; 1655 before the allocation and request-context rounds of issue 35)
}

// codexReq is a Codex CLI request late in a session, about 80 KB,
// streamed, store false (what Codex 0.171 sends: internal/responses's
// codexRequest, test/node/codex_test.go): 10 KB of instructions, its tool
// types (functions with JSON schemas, a namespace of functions,
// web_search, a custom tool with a lark grammar), and an input of the
// developer and user messages, then 20 rounds of an encrypted reasoning
// item, an exec_command call and its output (escaped quotes and
// newlines, as a shell's are), and the user's next question.
var codexReq = func() string {
	para := strings.Repeat(`Run the command in the sandbox. Do not use it for \"dangerous\" things.\n - Always quote paths with spaces.\n`, 20)
	fn := func(name string) string {
		return fmt.Sprintf(`{"type":"function","name":%q,"description":"%s","strict":false,"parameters":{"type":"object","properties":{"cmd":{"type":"string","description":"the command"},"workdir":{"type":"string"},"yield_time_ms":{"type":"number"}},"required":["cmd"],"additionalProperties":false}}`, name, para[:600])
	}
	tools := []string{fn("exec_command"), fn("write_stdin"), fn("update_plan"), fn("view_image"),
		`{"type":"namespace","name":"multi_agent_v1","description":"Sub-agents.","tools":[` + fn("spawn_agent") + `,` + fn("send_input") + `,` + fn("close_agent") + `]}`,
		`{"type":"web_search","external_web_access":false}`,
		`{"type":"custom","name":"apply_patch","description":"Use the apply_patch tool to edit files.","format":{"type":"grammar","syntax":"lark","definition":"start: begin_patch hunk+ end_patch\nbegin_patch: \"*** Begin Patch\" LF\nend_patch: \"*** End Patch\" LF?\nhunk: add_hunk | delete_hunk | update_hunk\n%import common.LF\n"}}`}
	input := []string{
		`{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions instructions>Filesystem sandboxing: danger-full-access.\nApprovals: never.</permissions instructions>"}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/src/project</cwd>\n  <shell>bash</shell>\n</environment_context>"}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"Find why the tests fail and fix it."}]}`,
	}
	for i := range 20 {
		input = append(input,
			fmt.Sprintf(`{"type":"reasoning","summary":[{"type":"summary_text","text":"**Inspecting the tests**"}],"encrypted_content":"gAAAAABo%s"}`, strings.Repeat("Zk9xT2Vh", 100)),
			fmt.Sprintf(`{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"sed -n 1,200p src/file_%d.go\",\"workdir\":\"/src/project\"}","call_id":"call_%d"}`, i, i),
			fmt.Sprintf(`{"type":"function_call_output","call_id":"call_%d","output":"Chunk ID: 1f2e\nWall time: 0.01 seconds\nProcess exited with code 0\nOutput:\n%s"}`, i, para[:1800]))
	}
	input = append(input, `{"type":"message","role":"user","content":[{"type":"input_text","text":"And the last one?"}]}`)
	return `{"model":"m","instructions":"` + strings.Repeat(para, 5) + `","input":[` + strings.Join(input, ",") + `],"tools":[` + strings.Join(tools, ",") +
		`],"tool_choice":"auto","parallel_tool_calls":true,"reasoning":{"effort":"medium","summary":"auto"},"store":false,"stream":true,` +
		`"include":["reasoning.encrypted_content"],"prompt_cache_key":"0195-session","client_metadata":{"session_id":"0195-session"}}`
}()

func respStreamBody() string {
	var b strings.Builder
	ev := func(typ, data string) { b.WriteString("event: " + typ + "\ndata: " + data + "\n\n") }
	ev("response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","created_at":1,"status":"in_progress","model":"gpt-5","output":[]}}`)
	ev("response.in_progress", `{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_1","object":"response","created_at":1,"status":"in_progress","model":"gpt-5","output":[]}}`)
	ev("response.output_item.added", `{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"type":"message","id":"msg_1","status":"in_progress","role":"assistant","content":[]}}`)
	ev("response.content_part.added", `{"type":"response.content_part.added","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}`)
	n := 4
	for range benchEvents {
		ev("response.output_text.delta", fmt.Sprintf(`{"type":"response.output_text.delta","sequence_number":%d,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hello "}`, n))
		n++
	}
	text := strings.Repeat("Hello ", benchEvents)
	ev("response.output_text.done", fmt.Sprintf(`{"type":"response.output_text.done","sequence_number":%d,"item_id":"msg_1","output_index":0,"content_index":0,"text":%q}`, n, text))
	ev("response.content_part.done", fmt.Sprintf(`{"type":"response.content_part.done","sequence_number":%d,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":%q,"annotations":[]}}`, n+1, text))
	item := fmt.Sprintf(`{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":%q,"annotations":[]}]}`, text)
	ev("response.output_item.done", fmt.Sprintf(`{"type":"response.output_item.done","sequence_number":%d,"output_index":0,"item":%s}`, n+2, item))
	ev("response.completed", fmt.Sprintf(`{"type":"response.completed","sequence_number":%d,"response":{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-5","output":[%s],"usage":{"input_tokens":20,"output_tokens":20,"total_tokens":40}}}`, n+3, item))
	return b.String()
}

func chatStreamBody() string {
	var b strings.Builder
	b.WriteString(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"x","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n")
	for range benchEvents {
		b.WriteString(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"x","choices":[{"index":0,"delta":{"content":"Hello "},"finish_reason":null}]}` + "\n\n")
	}
	b.WriteString(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n")
	b.WriteString(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"x","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":20,"total_tokens":40}}` + "\n\ndata: [DONE]\n\n")
	return b.String()
}

func msgStreamBody() string {
	var b strings.Builder
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":20,\"output_tokens\":1}}}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for range benchEvents {
		b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello \"}}\n\n")
	}
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	b.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":20}}\n\n")
	b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return b.String()
}

// benchPath is one path: the client's body, and the adapter behind the
// router.
type benchPath struct {
	body    string
	adapter func(pc provider.Config) (provider.Adapter, error)
}

// canned is an in-memory answer of one content type.
func canned(contentType, body string) *http.Client {
	return &http.Client{Transport: providertest.Canned{ContentType: contentType, Body: body}}
}

func nativeAdapter(contentType, body string) func(pc provider.Config) (provider.Adapter, error) {
	return func(pc provider.Config) (provider.Adapter, error) {
		pc.BaseURL = "http://upstream.invalid/v1"
		return openai.New(openai.OpenAI, pc, "k", openai.Config{}, canned(contentType, body))
	}
}

func chatAdapter(contentType, body string) func(pc provider.Config) (provider.Adapter, error) {
	return func(pc provider.Config) (provider.Adapter, error) {
		pc.BaseURL = "http://upstream.invalid/v1"
		return openai.New(openai.Compatible, pc, "", openai.Config{}, canned(contentType, body))
	}
}

func anthropicAdapter(contentType, body string) func(pc provider.Config) (provider.Adapter, error) {
	return func(pc provider.Config) (provider.Adapter, error) {
		pc.BaseURL = "http://upstream.invalid"
		return anthropic.New(pc, "k", anthropic.Config{}, canned(contentType, body))
	}
}

var benchPaths = map[string]benchPath{
	"native":                  {benchReq, nativeAdapter("application/json", respAnswer)},
	"native-stream":           {benchStreamReq, nativeAdapter("text/event-stream", respStreamBody())},
	"translated":              {benchReq, chatAdapter("application/json", chatAnswer)},
	"translated-stream":       {benchStreamReq, chatAdapter("text/event-stream", chatStreamBody())},
	"anthropic":               {benchReq, anthropicAdapter("application/json", msgAnswer)},
	"anthropic-stream":        {benchStreamReq, anthropicAdapter("text/event-stream", msgStreamBody())},
	"native-codex-stream":     {codexReq, nativeAdapter("text/event-stream", respStreamBody())},
	"translated-codex-stream": {codexReq, chatAdapter("text/event-stream", chatStreamBody())},
	"anthropic-codex-stream":  {codexReq, anthropicAdapter("text/event-stream", msgStreamBody())},
}

func pathHandler(tb testing.TB, p benchPath) http.Handler {
	tb.Helper()
	api, err := New(Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return proxytest.Handler(tb, p.adapter, "up-model", api.Dialect())
}

func serve(tb testing.TB, h http.Handler, p benchPath, w *proxytest.Sink) {
	proxytest.Serve(tb, h, "/v1/responses", p.body, w)
}

func TestAllocationBudgets(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts differ under -race and are only meaningful in a normal build")
	}
	proxytest.Budgets(t, slices.Sorted(maps.Keys(benchPaths)), allocBudgets, func(t testing.TB, name string) func() {
		p := benchPaths[name]
		h := pathHandler(t, p)
		w := &proxytest.Sink{}
		return func() { serve(t, h, p, w) }
	})
}

// BenchmarkPath: time and allocations per request of the Responses paths
// (streams of 20 content deltas), and an 80 KB Codex request served
// natively and translated to either target.
func BenchmarkPath(b *testing.B) {
	for _, name := range []string{"native", "translated", "anthropic", "native-stream", "translated-stream", "anthropic-stream",
		"native-codex-stream", "translated-codex-stream", "anthropic-codex-stream"} {
		b.Run(name, func(b *testing.B) {
			p := benchPaths[name]
			h := pathHandler(b, p)
			w := &proxytest.Sink{}
			b.ReportAllocs()
			for b.Loop() {
				serve(b, h, p, w)
			}
		})
	}
}
