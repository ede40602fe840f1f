package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// messagesBody is a Messages request for model "m".
func messagesBody(stream bool) string {
	b := `{"model":"m","max_tokens":16,"system":[{"type":"text","text":"be brief","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}]`
	if stream {
		b += `,"stream":true`
	}
	return b + "}"
}

// messagesCall sends one Messages request for model "m" to the router at
// base, as the Anthropic SDKs do (a query string, a version, a beta), and
// reads the whole answer.
func messagesCall(client *http.Client, base string, stream bool) (reply, error) {
	return sendMessages(client, base+"/v1/messages?beta=true", messagesBody(stream), "interleaved-thinking-2025-05-14")
}

// sendMessages posts body to url with anthropic-version and, when not
// empty, anthropic-beta, and reads the whole answer; a transport or read
// error is returned.
func sendMessages(client *http.Client, url, body, beta string) (reply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	if beta != "" {
		req.Header.Set("Anthropic-Beta", beta)
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return reply{}, fmt.Errorf("sending: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	rep := reply{status: resp.StatusCode, header: resp.Header, body: b, elapsed: time.Since(start)}
	if err != nil {
		return rep, fmt.Errorf("reading the body (%d bytes so far %q): %w", len(b), b, err)
	}
	return rep, nil
}

// checkMessages validates rep as the one answer to a Messages request and
// returns its class and its text: a message (200 JSON), a stream ending in
// message_stop, a stream ending in exactly one error event (and no
// message_stop), or an Anthropic-shaped error.
func checkMessages(rep reply, stream bool) (answerClass, string, error) {
	if rep.status != http.StatusOK {
		if e := gjson.GetBytes(rep.body, "error.type"); gjson.GetBytes(rep.body, "type").Str != "error" || e.Str == "" {
			return malformed, "", fmt.Errorf("status %d without an Anthropic error: %q", rep.status, rep.body)
		}
		return errorReply, "", nil
	}
	if !stream {
		if !json.Valid(rep.body) || gjson.GetBytes(rep.body, "type").Str != "message" {
			return malformed, "", fmt.Errorf("not a message: %q", rep.body)
		}
		var text strings.Builder
		for _, b := range gjson.GetBytes(rep.body, "content").Array() {
			text.WriteString(b.Get("text").Str)
		}
		return completion, text.String(), nil
	}
	if ct := rep.header.Get("Content-Type"); ct != "text/event-stream" {
		return malformed, "", fmt.Errorf("stream content type %q", ct)
	}
	var (
		names []string
		text  strings.Builder
		name  string
	)
	for _, line := range strings.Split(string(rep.body), "\n") {
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			d := strings.TrimPrefix(line, "data: ")
			if !json.Valid([]byte(d)) || gjson.Get(d, "type").Str != name {
				return malformed, "", fmt.Errorf("event %q with data %q", name, d)
			}
			names = append(names, name)
			if name == "content_block_delta" {
				text.WriteString(gjson.Get(d, "delta.text").Str)
			}
		}
	}
	if len(names) == 0 || !strings.HasSuffix(string(rep.body), "\n\n") {
		return malformed, "", fmt.Errorf("stream %q", rep.body)
	}
	errs := strings.Count(strings.Join(names, " "), "error")
	switch last := names[len(names)-1]; {
	case last == "message_stop" && errs == 0 && names[0] == "message_start":
		return streamDone, text.String(), nil
	case last == "error" && errs == 1 && !strings.Contains(strings.Join(names, " "), "message_stop"):
		return streamError, text.String(), nil
	}
	return malformed, "", fmt.Errorf("events %v", names)
}

// testBinaryMessagesFaults is the wire-fault matrix of testBinaryWireFaults
// on POST /v1/messages: per dialect, the faulted provider in tier 0 (an
// Anthropic one takes the request natively, an OpenAI-compatible one
// translated) and a healthy one of the other dialect in tier 1. A stream
// cut after its first content ends with that content and one Anthropic
// error event; every fault before the first content fails over to tier
// 1, the client seeing a whole Messages answer either way
// (docs/ARCHITECTURE.md, "Anthropic Messages API").
func testBinaryMessagesFaults(t *testing.T, bin string) {
	same := func(f fault) func(dialect) fault { return func(dialect) fault { return f } }
	rows := []struct {
		name     string
		stream   bool
		fault    func(dialect) fault
		failover bool // else: one error event after the first content
	}{
		{name: "cut after first chunk", stream: true, fault: same(fault{kind: cutStream})},
		{name: "reset after first chunk", stream: true, fault: same(fault{kind: resetStream})},
		{name: "503 with error body", fault: func(d dialect) fault { return serviceUnavailable(d).fault }, failover: true},
		{name: "503 with error body, streamed", stream: true, fault: func(d dialect) fault { return serviceUnavailable(d).fault }, failover: true},
		{name: "connection reset", fault: same(fault{kind: reset}), failover: true},
		{name: "slow first token", stream: true, fault: same(fault{kind: slowFirstToken, delay: 5 * time.Second}), failover: true},
		{name: "garbage 200 stream", stream: true, fault: same(fault{kind: garbage}), failover: true},
	}
	for _, d := range []dialect{anthropicAPI, openaiAPI} {
		t.Run(d.String(), func(t *testing.T) {
			faulted := newBinFake(t, "faulted", d)
			backup := newBinFake(t, "backup", otherDialect(d))
			var pending atomic.Pointer[fault]
			faulted.setAPI(func(int, bool) binFault {
				if f := pending.Swap(nil); f != nil {
					return binFault{fault: *f}
				}
				return binFault{}
			})
			p := startRouter(t, bin, binConfig{
				providers: []binProvider{
					{fake: faulted, typ: providerType(d), tier: 0, firstToken: 300 * time.Millisecond, timeout: time.Second},
					{fake: backup, typ: providerType(otherDialect(d)), tier: 1},
				},
				routing:  "adaptive_throttle_k: 0",
				tierWait: "0s", // each fault fails over to tier 1 on the second attempt
			})
			defer p.stop()
			for _, row := range rows {
				t.Run(row.name, func(t *testing.T) {
					before := backup.count(false, 0)
					f := row.fault(d)
					pending.Store(&f)
					rep, err := messagesCall(p.client, p.api, row.stream)
					if err != nil {
						t.Fatalf("request: %v", err)
					}
					if pending.Load() != nil {
						pending.Store(nil)
						t.Fatalf("the faulted provider was not tried first; got %d from %q", rep.status, rep.header.Get("X-LLMRouter-Provider"))
					}
					class, text, err := checkMessages(rep, row.stream)
					if err != nil {
						t.Fatalf("malformed answer: %v", err)
					}
					calls := backup.count(false, 0) - before
					who := rep.header.Get("X-LLMRouter-Provider")
					// Between faults the faulted provider still serves (and
					// its consecutive failures start again from none).
					defer messagesServedBy(t, p, faulted, row.stream)
					if row.failover {
						if class != completion && class != streamDone {
							t.Errorf("got a %s, want a whole Messages answer; body %q", class, rep.body)
						}
						if text != backup.text() {
							t.Errorf("got text %q, want %q", text, backup.text())
						}
						if who != backup.name || attempts(rep) != 2 || rep.header.Get("X-LLMRouter-Degraded") != "true" || calls != 1 {
							t.Errorf("got provider %q, attempts %d, degraded %q, %d tier-1 calls; want %q, 2, true, 1",
								who, attempts(rep), rep.header.Get("X-LLMRouter-Degraded"), calls, backup.name)
						}
						return
					}
					if class != streamError || text != "hello " {
						t.Errorf("got a %s with text %q, want a stream ending in one error event after %q; body %q", class, text, "hello ", rep.body)
					}
					if who != faulted.name || attempts(rep) != 1 || calls != 0 {
						t.Errorf("got provider %q, attempts %d, %d tier-1 calls after the commit point; want %q, 1, 0", who, attempts(rep), calls, faulted.name)
					}
				})
			}
		})
	}
}

// messagesServedBy checks that a Messages request is answered whole by up, its
// text up's.
func messagesServedBy(t *testing.T, p *routerProc, up *binFake, stream bool) {
	t.Helper()
	rep, err := messagesCall(p.client, p.api, stream)
	if err != nil {
		t.Fatal(err)
	}
	if class, text, err := checkMessages(rep, stream); err != nil || (class != completion && class != streamDone) ||
		text != up.text() || rep.header.Get("X-LLMRouter-Provider") != up.name {
		t.Errorf("the request after the fault: got %s %q from %q (%v), want %s's whole answer; body %q",
			class, text, rep.header.Get("X-LLMRouter-Provider"), err, up.name, rep.body)
	}
}
