package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// testBinaryCleanEnd: per dialect, a provider in tier 0 whose streams
// end cleanly without their closing event (no [DONE] after the finish and
// usage chunks; no message_stop after message_delta), as several
// self-hosted servers and proxies do, and a healthy one of the other
// dialect in tier 1. On chat, Responses and Messages, each plain or
// translated as the dialect makes it, the client gets the whole answer
// with its usage and its API's own ending ([DONE], response.completed,
// message_stop), no error event, from tier 0 in one attempt; a stream
// that ends cleanly before any finish still ends with one error event
// (docs/ARCHITECTURE.md, "Streaming": a clean end is an end).
func testBinaryCleanEnd(t *testing.T, bin string) {
	type front struct {
		name string
		send func(p *routerProc) (reply, error)
		// read checks a reply's shape and returns its text, its output
		// tokens and whether it ended whole (else with one error event).
		read func(rep reply) (text string, out int64, whole bool, err error)
	}
	fronts := []front{
		{"chat", func(p *routerProc) (reply, error) {
			return postJSON(p.client, p.api+"/v1/chat/completions",
				`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":16,"stream":true,"stream_options":{"include_usage":true}}`)
		}, readChatStream},
		{"responses", func(p *routerProc) (reply, error) {
			return postJSON(p.client, p.api+"/v1/responses", `{"model":"m","input":"hi","max_output_tokens":16,"stream":true}`)
		}, readResponsesStream},
		{"messages", func(p *routerProc) (reply, error) {
			return messagesCall(p.client, p.api, true)
		}, func(rep reply) (string, int64, bool, error) {
			class, text, err := checkMessages(rep, true)
			if err != nil {
				return "", 0, false, err
			}
			var out int64
			for _, d := range dataLines(rep.body) {
				if gjson.Get(d, "type").Str == "message_delta" {
					out = gjson.Get(d, "usage.output_tokens").Int()
				}
			}
			return text, out, class == streamDone, nil
		}},
	}
	for _, d := range []dialect{openaiAPI, anthropicAPI} {
		t.Run(d.String(), func(t *testing.T) {
			faulted := newBinFake(t, "unclosed", d)
			backup := newBinFake(t, "backup", otherDialect(d))
			var cut atomic.Bool // the next call ends before its finish
			faulted.setAPI(func(_ int, stream bool) binFault {
				if cut.Swap(false) {
					return binFault{fault: fault{kind: cutStream}}
				}
				return binFault{fault: fault{kind: noDone}}
			})
			p := startRouter(t, bin, binConfig{
				providers: []binProvider{
					{fake: faulted, typ: providerType(d), tier: 0},
					{fake: backup, typ: providerType(otherDialect(d)), tier: 1},
				},
				routing: "adaptive_throttle_k: 0",
			})
			defer p.stop()
			for _, f := range fronts {
				for _, row := range []struct {
					name string
					cut  bool
				}{{"whole without its closing event", false}, {"ended before its finish", true}} {
					t.Run(f.name+"/"+row.name, func(t *testing.T) {
						cut.Store(row.cut)
						rep, err := f.send(p)
						if err != nil {
							t.Fatalf("request: %v", err)
						}
						if rep.status != http.StatusOK {
							t.Fatalf("status %d, want 200; body %s", rep.status, rep.body)
						}
						text, out, whole, err := f.read(rep)
						if err != nil {
							t.Fatalf("malformed answer: %v; body %s", err, rep.body)
						}
						if who := rep.header.Get("X-LLMRouter-Provider"); who != faulted.name || attempts(rep) != 1 || backup.count(false, 0) != 0 {
							t.Errorf("served by %q in %d attempts, %d tier-1 calls; want %q, 1, 0", who, attempts(rep), backup.count(false, 0), faulted.name)
						}
						if row.cut {
							if whole || text != "hello " {
								t.Errorf("got whole %v, text %q; want one error event after %q; body %s", whole, text, "hello ", rep.body)
							}
							return
						}
						if !whole || text != faulted.text() || out != 3 {
							t.Errorf("got whole %v, text %q, %d output tokens; want the whole answer %q with its usage (3); body %s",
								whole, text, out, faulted.text(), rep.body)
						}
					})
				}
			}
			// The log reports only the cut rows' cuts.
			log := p.stderr.String()
			if n := strings.Count(log, "without [DONE]") + strings.Count(log, "before its stop reason"); n > len(fronts) {
				t.Errorf("the log reports %d cuts, want at most %d (the cut rows):\n%s", n, len(fronts), log)
			}
		})
	}
}

// postJSON posts body to url and reads the whole answer.
func postJSON(client *http.Client, url, body string) (reply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return reply{}, fmt.Errorf("sending: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	rep := reply{status: resp.StatusCode, header: resp.Header, body: b}
	if err != nil {
		return rep, fmt.Errorf("reading the body (%d bytes so far %q): %w", len(b), b, err)
	}
	return rep, nil
}

// dataLines returns the data of each event of an SSE body.
func dataLines(body []byte) []string {
	var out []string
	for _, line := range strings.Split(string(body), "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// readChatStream reads a chat stream: its text, the usage chunk's
// completion tokens, and whether it ended with [DONE] (else with one
// error event).
func readChatStream(rep reply) (string, int64, bool, error) {
	class, err := check(&rep, true)
	if err != nil {
		return "", 0, false, err
	}
	var out int64
	for _, e := range rep.events {
		if u := gjson.Get(e, "usage"); u.IsObject() {
			out = u.Get("completion_tokens").Int()
		}
	}
	return content(rep), out, class == streamDone, nil
}

// readResponsesStream reads a Responses stream: its text (the output text
// deltas), the terminal response's output tokens, and whether it ended
// with response.completed and nothing wrong (else with one error event
// and response.failed).
func readResponsesStream(rep reply) (string, int64, bool, error) {
	var (
		types []string
		text  strings.Builder
		out   int64
	)
	for _, d := range dataLines(rep.body) {
		ev := gjson.Parse(d)
		typ := ev.Get("type").Str
		types = append(types, typ)
		switch typ {
		case "response.output_text.delta":
			text.WriteString(ev.Get("delta").Str)
		case "response.completed", "response.failed":
			out = ev.Get("response.usage.output_tokens").Int()
		}
	}
	all := strings.Join(types, " ")
	switch {
	case len(types) == 0 || types[0] != "response.created":
		return "", 0, false, fmt.Errorf("events %v", types)
	case types[len(types)-1] == "response.completed" && !strings.Contains(all, "error") && !strings.Contains(all, "failed"):
		return text.String(), out, true, nil
	case types[len(types)-1] == "response.failed" && strings.Count(all, "error") == 1 && !strings.Contains(all, "completed"):
		return text.String(), out, false, nil
	}
	return "", 0, false, fmt.Errorf("events %v", types)
}
