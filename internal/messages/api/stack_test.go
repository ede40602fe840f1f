package api

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/proxy/proxytest"

	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/anthropic"
	"github.com/llmrouter/llmrouter/internal/provider/bedrock"
	"github.com/llmrouter/llmrouter/internal/provider/bedrock/bedrocktest"
	"github.com/llmrouter/llmrouter/internal/provider/gemini"
	"github.com/llmrouter/llmrouter/internal/provider/openai"
)

// heldStream is an upstream stream body that sends its events, the
// finish and the usage included, then waits for release before its last
// bytes (tail).
type heldStream struct {
	r          *strings.Reader
	tail       string
	release    <-chan struct{}
	sent       chan<- struct{}
	done, told bool
}

func (b *heldStream) Read(p []byte) (int, error) {
	if b.r.Len() > 0 {
		return b.r.Read(p)
	}
	if b.done {
		return 0, io.EOF
	}
	if !b.told {
		b.told = true
		b.sent <- struct{}{}
		<-b.release
	}
	b.done = true
	return copy(p, b.tail), nil
}

func (b *heldStream) Close() error { return nil }

type heldTransport struct {
	events, tail string
	release      <-chan struct{}
	sent         chan<- struct{}
}

func (t *heldTransport) RoundTrip(*http.Request) (*http.Response, error) {
	ct := "text/event-stream"
	if strings.HasPrefix(t.events, "\x00") { // an event-stream frame's length
		ct = "application/vnd.amazon.eventstream"
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {ct}},
		Body: &heldStream{r: strings.NewReader(t.events), tail: t.tail, release: t.release, sent: t.sent}}, nil
}

// frames are Bedrock's event-stream frames of op's events.
func frames(op bedrocktest.Op, evs []bedrocktest.Event) string {
	var b []byte
	for _, ev := range evs {
		b = append(b, bedrocktest.Frame(op, ev)...)
	}
	return string(b)
}

// The upstream streams a held stream sends before its wait: every event
// up to the finish and the usage, then (after the wait) the end.
const (
	heldChat = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"x","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"x","choices":[{"index":0,"delta":{"content":"Hello "},"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" +
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"x","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":20,"total_tokens":40,"prompt_tokens_details":{"cached_tokens":5}}}` + "\n\n"
	heldChatEnd = "data: [DONE]\n\n"
	heldMsg     = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":20,\"cache_read_input_tokens\":5,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello \"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":20}}\n\n"
	heldMsgEnd = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	heldGemini = `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hello "}]},"index":0}],"usageMetadata":{"promptTokenCount":20,"totalTokenCount":20},"modelVersion":"gemini-2.5-pro"}` + "\r\n\r\n" +
		`data: {"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":20,"candidatesTokenCount":20,"totalTokenCount":40,"cachedContentTokenCount":5},"modelVersion":"gemini-2.5-pro"}` + "\r\n\r\n"
)

// TestStackPerStream: for each stream path users run at scale, the
// goroutine stack a stream holds while it waits for its next event,
// after its finish and usage were read. A path whose frames once reach
// past 8 KiB grows the stack to 16 KiB and keeps it for the stream's life
// (~6 KB of frames stay live while it waits, so the collector never
// halves it): docs/BENCHMARKS.md, "Memory per stream". internal/proxy's
// test of the same name holds the chat → openai path.
//
// want is what each path holds now. chat → anthropic held 16 KiB until
// the adapter's decode of the chat request left the request's goroutine
// (openaiwire.Decode): encoding/json's decodeState.object (864 B) and
// array (968 B) frames, with their value frames, recur once per nesting
// level (about 3.5 KB for a one-message request, more with content parts
// and tool calls), on top of anthropic's decodeRequest, translate and Do
// (344, 416, 656 B) and the ~3 KB from the handler down to the attempt.
// The gemini paths held 16 KiB: the same decode (gemini.translateChat)
// grew them, and once it was off the goroutine so did the stream's read
// of each event, gjson's nested ForEach over the candidates and their
// parts (496 B each, with their closures 408 and 416 B, addChoice 336 B,
// gjson's Get 752 B) and its number parse (strconv's atof64, 912 B) for
// a candidate's index and the usage: the events are read with jsonscan
// now (gemini/scan.go).
//
// The Bedrock paths held 16 KiB: a stream's request was signed on the
// request's goroutine (the SDK's SignHTTP 488 B, its signing frames 688
// and 144 B, time.Format's appendFormat 624 B, on OnCloud 600 B and the
// adapter's post and send), and a chat request to a Converse model was
// translated there too (translateConverse 768 B over encoding/json's
// decode and encode frames, per nesting level): both run on a goroutine
// of their own for a stream now (bedrock's apart).
func TestStackPerStream(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("frame sizes differ under -race")
	}
	type held struct {
		name         string
		want         int // KiB of stack per waiting stream
		route, body  string
		events, tail string
		adapter      func(pc provider.Config, c *http.Client) (provider.Adapter, error)
		target       string // the target's model; "" is up-model
	}
	anth := func(pc provider.Config, c *http.Client) (provider.Adapter, error) {
		pc.BaseURL = "http://upstream.invalid"
		return anthropic.New(pc, "k", anthropic.Config{}, c)
	}
	chat := func(pc provider.Config, c *http.Client) (provider.Adapter, error) {
		pc.BaseURL = "http://upstream.invalid/v1"
		return openai.New(openai.Compatible, pc, "", openai.Config{}, c)
	}
	gem := func(pc provider.Config, c *http.Client) (provider.Adapter, error) {
		pc.BaseURL = "http://upstream.invalid"
		return gemini.New(pc, "k", gemini.Config{}, c)
	}
	bed := func(pc provider.Config, c *http.Client) (provider.Adapter, error) {
		pc.BaseURL = "http://upstream.invalid"
		return bedrock.New(pc, bedrock.Config{Region: "us-east-1"}, c)
	}
	// Bedrock signs with the credentials of the default chain: the
	// fake's, from the environment only.
	t.Setenv("AWS_ACCESS_KEY_ID", bedrocktest.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", bedrocktest.SecretAccessKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	invoke := bedrocktest.MessagesEvents("Hello there")
	converse := bedrocktest.Default(bedrocktest.Request{Op: bedrocktest.ConverseStream, Model: "meta.llama3-x"}).Events
	heldInvoke := frames(bedrocktest.InvokeStream, invoke[:len(invoke)-1])
	heldInvokeEnd := frames(bedrocktest.InvokeStream, invoke[len(invoke)-1:])
	heldConverse := frames(bedrocktest.ConverseStream, converse)
	const claude, llama = "us.anthropic.claude-x", "meta.llama3-x"
	chatStream := `{"model":"m","max_tokens":64,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Say hello in five words please."}]}`
	for _, p := range []held{
		{"messages-anthropic", 8, "/v1/messages", msgStreamReq, heldMsg, heldMsgEnd, anth, ""},
		{"messages-openai", 8, "/v1/messages", msgStreamReq, heldChat, heldChatEnd, chat, ""},
		{"chat-anthropic", 8, "/v1/chat/completions", chatStream, heldMsg, heldMsgEnd, anth, ""},
		{"chat-gemini", 8, "/v1/chat/completions", chatStream, heldGemini, "", gem, ""},
		{"messages-gemini", 8, "/v1/messages", msgStreamReq, heldGemini, "", gem, ""},
		{"messages-bedrock-claude", 8, "/v1/messages", msgStreamReq, heldInvoke, heldInvokeEnd, bed, claude},
		{"chat-bedrock-claude", 8, "/v1/chat/completions", chatStream, heldInvoke, heldInvokeEnd, bed, claude},
		{"chat-bedrock-converse", 8, "/v1/chat/completions", chatStream, heldConverse, "", bed, llama},
		{"messages-bedrock-converse", 8, "/v1/messages", msgStreamReq, heldConverse, "", bed, llama},
	} {
		t.Run(p.name, func(t *testing.T) {
			const n = 250 // under pathHandler's MaxConcurrency
			release := make(chan struct{})
			sent := make(chan struct{}, n)
			// One stream first, released at once: what an adapter does
			// once (Bedrock's credential chain) is not on a stream's stack.
			warm := make(chan struct{})
			close(warm)
			tr := &heldTransport{p.events, p.tail, warm, sent}
			a, err := p.adapter(provider.Config{Name: "up", MaxConcurrency: 1024}, &http.Client{Transport: tr})
			if err != nil {
				t.Fatal(err)
			}
			target := p.target
			if target == "" {
				target = "up-model"
			}
			h := proxytest.Handler(t, func(provider.Config) (provider.Adapter, error) { return a, nil }, target, New(nil).Dialect())
			wr := httptest.NewRecorder()
			r, _ := http.NewRequest("POST", p.route, strings.NewReader(p.body))
			r.Header.Set("Content-Type", "application/json")
			h.ServeHTTP(wr, r)
			<-sent
			if wr.Code != http.StatusOK || wr.Body.Len() == 0 {
				t.Fatalf("the first stream answered %d: %s", wr.Code, wr.Body)
			}
			tr.release = release
			var before, after runtime.MemStats
			runtime.GC()
			runtime.GC()
			runtime.ReadMemStats(&before)
			done := make(chan struct{}, n)
			for range n {
				go func() {
					defer func() { done <- struct{}{} }()
					r, _ := http.NewRequest("POST", p.route, strings.NewReader(p.body))
					r.Header.Set("Content-Type", "application/json")
					h.ServeHTTP(&proxytest.Sink{}, r)
				}()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for range n {
				select {
				case <-sent:
				case <-ctx.Done():
					close(release)
					t.Fatal("streams did not reach their wait")
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			close(release)
			for range n {
				<-done
			}
			perStream := float64(after.StackInuse-before.StackInuse) / n
			t.Logf("%s: %.1f KiB of goroutine stack per waiting stream (holds %d)", p.name, perStream/1024, p.want)
			// Halfway to the next size: a stack is 8, 16 or 32 KiB.
			if perStream > float64(p.want)*1.5*1024 {
				t.Errorf("%s: %.1f KiB of stack per waiting stream, want %d (a frame on the path grew it to the next size)", p.name, perStream/1024, p.want)
			}
		})
	}
}
