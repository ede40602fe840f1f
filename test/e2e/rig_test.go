package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/backoff"
	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/policy"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/anthropic"
	"github.com/llmrouter/llmrouter/internal/provider/openai"
	"github.com/llmrouter/llmrouter/internal/proxy"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
	"github.com/llmrouter/llmrouter/internal/upstream/shared"
)

// fastRetry is routing.retry scaled down so backoffs never slow a test.
var fastRetry = backoff.Config{
	MaxAttempts: 3, InitialBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
	Multiplier: 2, Jitter: 0.5,
}

// hangBound is the generous upper bound on any one request: it catches
// hangs, it does not measure speed.
const hangBound = 2 * time.Second

// prov is one provider of a rig: a fake upstream behind a real adapter.
type prov struct {
	up *upstream
	// typ is the config type: openai, openai_compatible or anthropic; it
	// must match up's dialect.
	typ        string
	tier       int
	firstToken time.Duration // first_token_timeout; 0 means the default
	timeout    time.Duration // timeout; 0 means the default
}

// rig is the router in-process on an httptest server, with its providers
// and a real client.
type rig struct {
	t        testing.TB
	server   *proxy.Server
	front    *httptest.Server
	client   *http.Client
	ups      []*upstream
	pclients []*http.Client // the adapters' clients, to close their idle connections
	errLog   *lockedBuffer  // the front server's error log
	once     sync.Once
}

type rigOptions struct {
	requestTimeout time.Duration  // 0 means 30s
	breaker        breaker.Config // zero means breaker.DefaultConfig
	throttleK      float64        // adaptive throttling K; 0 disables it
}

// newRig builds the router over provs for model "m"; close (also run at
// cleanup) shuts everything down.
func newRig(t testing.TB, o rigOptions, provs ...prov) *rig {
	t.Helper()
	r := &rig{t: t, errLog: &lockedBuffer{}}
	mc := route.ModelConfig{Name: "m"}
	var ps []provider.Descriptor
	for _, p := range provs {
		pc := provider.Config{Name: p.up.name, Type: p.typ, FirstTokenTimeout: p.firstToken, Timeout: p.timeout}
		hc := provider.NewHTTPClient(pc)
		var (
			a   provider.Adapter
			err error
		)
		switch p.typ {
		case "openai":
			pc.BaseURL = p.up.srv.URL + "/v1"
			a, err = openai.New(openai.OpenAI, pc, "sk-test", openai.Config{}, hc)
		case "openai_compatible":
			pc.BaseURL = p.up.srv.URL + "/v1"
			a, err = openai.New(openai.Compatible, pc, "", openai.Config{}, hc)
		case "anthropic":
			pc.BaseURL = p.up.srv.URL
			a, err = anthropic.New(pc, "sk-ant-test", anthropic.Config{}, hc)
		default:
			t.Fatalf("unknown provider type %q", p.typ)
		}
		if err != nil {
			t.Fatalf("adapter %s: %v", p.up.name, err)
		}
		ps = append(ps, provider.Descriptor{Name: p.up.name, Type: p.typ, Adapter: a, Config: pc})
		mc.Targets = append(mc.Targets, route.Target{Provider: p.up.name, Model: "model-of-" + p.up.name, Tier: p.tier})
		r.ups = append(r.ups, p.up)
		r.pclients = append(r.pclients, hc)
	}
	table, err := route.NewTable([]route.ModelConfig{mc})
	if err != nil {
		t.Fatal(err)
	}
	if o.requestTimeout == 0 {
		o.requestTimeout = 30 * time.Second
	}
	r.server, err = proxy.Open(routing.Options{
		Providers: ps,
		Models:    table,
		Limits:    limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: o.requestTimeout},
		Routing:   policy.Config{Retry: policy.Retry{Config: fastRetry}},
		Policy:    shared.Policy{Breaker: o.breaker, ThrottleK: o.throttleK},
	})
	if err != nil {
		t.Fatal(err)
	}
	r.front = httptest.NewUnstartedServer(r.server.Handler())
	r.front.Config.ErrorLog = log.New(r.errLog, "", 0)
	r.front.Start()
	r.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	t.Cleanup(r.close)
	return r
}

// close shuts the client, router and upstreams down, in that order, and
// checks the router's server never wrote a second response header or
// panicked. It is idempotent.
func (r *rig) close() {
	r.once.Do(func() {
		r.client.CloseIdleConnections()
		r.front.Close()
		r.server.Close()
		for _, u := range r.ups {
			u.close()
		}
		for _, c := range r.pclients {
			c.CloseIdleConnections()
		}
		if l := r.errLog.String(); strings.Contains(l, "superfluous") || strings.Contains(l, "panic") {
			r.t.Errorf("router server log: %s", l)
		}
	})
}

// reply is what the client got for one request.
type reply struct {
	status  int
	header  http.Header
	body    []byte
	events  []string // stream: the data payloads, in order
	elapsed time.Duration
}

func chatBody(stream bool) string {
	b := `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":16`
	if stream {
		b += `,"stream":true`
	}
	return b + "}"
}

// chat sends one chat completion through the router with a real client and
// reads the whole answer. A transport or read error is returned: a
// well-behaved router never causes one.
func (r *rig) chat(stream bool) (reply, error) {
	return postChat(r.client, r.front.URL, stream)
}

// postChat sends one chat completion for model "m" to the router at base
// and reads the whole answer; a transport or read error is returned.
func postChat(client *http.Client, base string, stream bool) (reply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions",
		strings.NewReader(chatBody(stream)))
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return reply{}, fmt.Errorf("sending: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	rep := reply{status: resp.StatusCode, header: resp.Header, body: body, elapsed: time.Since(start)}
	if err != nil {
		return rep, fmt.Errorf("reading the body (%d bytes so far %q): %w", len(body), body, err)
	}
	return rep, nil
}

// answerClass names the shape of a well-formed reply.
type answerClass string

const (
	completion  answerClass = "completion"    // 200 chat.completion
	streamDone  answerClass = "stream [DONE]" // 200 stream ending with [DONE]
	streamError answerClass = "stream error"  // 200 stream ending with one error event
	errorReply  answerClass = "error"         // non-200 OpenAI-shaped error
	malformed   answerClass = "malformed"     // anything else
)

// check validates rep as the one answer to a request (stream: whether the
// client asked for a stream) and fills rep.events; the error says what is
// wrong with it.
func check(rep *reply, stream bool) (answerClass, error) {
	ct := rep.header.Get("Content-Type")
	switch {
	case rep.status == http.StatusOK && stream:
		if !strings.HasPrefix(ct, "text/event-stream") {
			return malformed, fmt.Errorf("200 stream with Content-Type %q, want text/event-stream", ct)
		}
		events, err := parseEvents(rep.body)
		if err != nil {
			return malformed, err
		}
		rep.events = events
		if len(events) == 0 {
			return malformed, fmt.Errorf("200 stream without events")
		}
		for i, e := range events {
			last := i == len(events)-1
			if e == "[DONE]" {
				if !last {
					return malformed, fmt.Errorf("event %d is [DONE] but %d more follow: %q", i, len(events)-1-i, rep.body)
				}
				continue
			}
			if !gjson.Valid(e) {
				return malformed, fmt.Errorf("event %d is not JSON: %q", i, e)
			}
			if errObj := gjson.Get(e, "error"); errObj.Exists() {
				if !last {
					return malformed, fmt.Errorf("event %d is an error but %d more follow: %q", i, len(events)-1-i, rep.body)
				}
				if err := checkErrorObject(errObj, 0); err != nil {
					return malformed, fmt.Errorf("stream error event: %w", err)
				}
				continue
			}
			if got := gjson.Get(e, "object").Str; got != "chat.completion.chunk" {
				return malformed, fmt.Errorf("event %d has object %q, want chat.completion.chunk: %q", i, got, e)
			}
		}
		if last := events[len(events)-1]; last == "[DONE]" {
			return streamDone, nil
		} else if gjson.Get(last, "error").Exists() {
			return streamError, nil
		}
		return malformed, fmt.Errorf("stream ends with neither [DONE] nor an error event: %q", rep.body)
	case rep.status == http.StatusOK:
		if !strings.HasPrefix(ct, "application/json") {
			return malformed, fmt.Errorf("200 with Content-Type %q, want application/json", ct)
		}
		if !gjson.ValidBytes(rep.body) {
			return malformed, fmt.Errorf("200 body is not JSON: %q", rep.body)
		}
		doc := gjson.ParseBytes(rep.body)
		if got := doc.Get("object").Str; got != "chat.completion" {
			return malformed, fmt.Errorf("200 body has object %q, want chat.completion: %q", got, rep.body)
		}
		if c := doc.Get("choices.0.message.content"); c.Type != gjson.String {
			return malformed, fmt.Errorf("200 body has no choices[0].message.content: %q", rep.body)
		}
		return completion, nil
	default:
		if !strings.HasPrefix(ct, "application/json") {
			return malformed, fmt.Errorf("status %d with Content-Type %q, want application/json: %q", rep.status, ct, rep.body)
		}
		if !gjson.ValidBytes(rep.body) {
			return malformed, fmt.Errorf("status %d body is not JSON: %q", rep.status, rep.body)
		}
		if err := checkErrorObject(gjson.GetBytes(rep.body, "error"), rep.status); err != nil {
			return malformed, fmt.Errorf("status %d: %w: %q", rep.status, err, rep.body)
		}
		return errorReply, nil
	}
}

// checkErrorObject checks an OpenAI error object; status > 0 also checks
// error.type against docs/ARCHITECTURE.md, "HTTP surface", where the
// router, not a provider, owns it.
func checkErrorObject(e gjson.Result, status int) error {
	if !e.IsObject() {
		return fmt.Errorf("no error object")
	}
	if m := e.Get("message"); m.Type != gjson.String || m.Str == "" {
		return fmt.Errorf("error.message missing or empty")
	}
	typ := e.Get("type")
	if typ.Type != gjson.String || typ.Str == "" {
		return fmt.Errorf("error.type missing or empty")
	}
	want := ""
	switch {
	case status == http.StatusTooManyRequests:
		want = "rate_limit_error"
	case status >= 500:
		want = "server_error"
	}
	if want != "" && typ.Str != want {
		return fmt.Errorf("error.type %q, want %q", typ.Str, want)
	}
	return nil
}

// parseEvents splits an SSE body into its data payloads. Every event must
// be exactly "data: <payload>\n\n"; comment-only events are skipped.
func parseEvents(body []byte) ([]string, error) {
	var out []string
	for len(body) > 0 {
		i := bytes.Index(body, []byte("\n\n"))
		if i < 0 {
			return out, fmt.Errorf("unterminated event %q", body)
		}
		ev := string(body[:i])
		body = body[i+2:]
		if strings.HasPrefix(ev, ":") && !strings.Contains(ev, "\n") {
			continue
		}
		p, ok := strings.CutPrefix(ev, "data: ")
		if !ok || strings.Contains(p, "\n") {
			return out, fmt.Errorf("event %q is not one data line", ev)
		}
		out = append(out, p)
	}
	return out, nil
}

// content is the text of a checked 200 reply: the message content, or the
// concatenated deltas of a stream.
func content(rep reply) string {
	if rep.events == nil {
		return gjson.GetBytes(rep.body, "choices.0.message.content").Str
	}
	var b strings.Builder
	for _, e := range rep.events {
		b.WriteString(gjson.Get(e, "choices.0.delta.content").Str)
	}
	return b.String()
}

// attempts is the reply's X-LLMRouter-Attempts, -1 when absent or not a
// number.
func attempts(rep reply) int {
	n, err := strconv.Atoi(rep.header.Get("X-LLMRouter-Attempts"))
	if err != nil {
		return -1
	}
	return n
}
