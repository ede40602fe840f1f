package e2e

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// rescueWords is how many words a rescueFake's whole answer has.
const rescueWords = 60

// rescueWord is the i-th word (from 1) of a rescueFake's answer: a leading
// space, as tokenizers cut text, so a prefix never ends in whitespace.
func rescueWord(i int) string { return fmt.Sprintf(" w%d", i) }

// rescueText is words from to to (from 1) joined.
func rescueText(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		b.WriteString(rescueWord(i))
	}
	return b.String()
}

// Modes of a rescueFake's answer to a call that is not a continuation.
const (
	rescueWhole = iota // all 60 words, the finish, the usage, the end
	rescueCut          // 40 words, then the connection is reset
	rescueStall        // 20 words, then nothing until the call is gone
	rescuePings        // 30 words, keep-alives only for 3 idle timeouts, then the rest
)

// prefillRefusal is Anthropic's answer to a prefill a model does not take.
const prefillRefusal = "This model does not support assistant message prefill. The conversation must end with a user message."

// rescueFake is a provider of dialect d that streams rescueWords words:
// a call whose conversation ends with an assistant message (a prefill)
// is continued from the word after the ones that message holds (or
// refused with Anthropic's 400 when refuse is set); any other call is
// answered as mode says.
type rescueFake struct {
	name   string
	d      dialect
	srv    *httptest.Server
	mode   atomic.Int32
	refuse atomic.Bool
	idle   time.Duration // the router's idle timeout (rescuePings' gap is 3 of them)

	mu       sync.Mutex // guards the fields below
	calls    int
	prefixes []string  // each prefilled call's assistant text, in order
	stalled  time.Time // when the latest stalled answer went silent
	prefixAt time.Time // when the latest prefilled call arrived
}

func newRescueFake(t testing.TB, name string, d dialect, idle time.Duration) *rescueFake {
	t.Helper()
	f := &rescueFake{name: name, d: d, idle: idle}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	return f
}

// seen returns the calls so far and the prefixes of the prefilled ones.
func (f *rescueFake) seen() (int, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, append([]string(nil), f.prefixes...)
}

// lastMessage is the text and role of a request's last message (a string
// content, or its text blocks joined).
func lastMessage(body []byte) (role, text string) {
	msgs := gjson.GetBytes(body, "messages").Array()
	if len(msgs) == 0 {
		return "", ""
	}
	m := msgs[len(msgs)-1]
	c := m.Get("content")
	if c.Type == gjson.String {
		return m.Get("role").Str, c.Str
	}
	var b strings.Builder
	for _, blk := range c.Array() {
		b.WriteString(blk.Get("text").Str)
	}
	return m.Get("role").Str, b.String()
}

func (f *rescueFake) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[]}`)
		return
	}
	body, _ := io.ReadAll(r.Body)
	role, prefix := lastMessage(body)
	f.mu.Lock()
	f.calls++
	prefilled := role == "assistant"
	if prefilled {
		f.prefixes = append(f.prefixes, prefix)
		f.prefixAt = time.Now()
	}
	f.mu.Unlock()
	if prefilled && f.refuse.Load() {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		if f.d == anthropicAPI {
			io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"`+prefillRefusal+`"},"request_id":"req_1"}`)
		} else {
			io.WriteString(w, `{"error":{"message":"`+prefillRefusal+`","type":"invalid_request_error","param":null,"code":null}}`)
		}
		return
	}
	from, mode := 1, int(f.mode.Load())
	if prefilled {
		from, mode = strings.Count(prefix, " w")+1, rescueWhole
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(name, data string) {
		if f.d == anthropicAPI && name != "" {
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
		} else {
			fmt.Fprintf(w, "data: %s\n\n", data)
		}
		_ = rc.Flush()
	}
	keepAlive := func() {
		if f.d == anthropicAPI {
			send("ping", `{"type":"ping"}`)
		} else {
			io.WriteString(w, ": keep-alive\n\n")
			_ = rc.Flush()
		}
	}
	word := func(i, block int) {
		if f.d == anthropicAPI {
			send("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%q}}`, block, rescueWord(i)))
			return
		}
		send("", fmt.Sprintf(`{"id":"c-%s","object":"chat.completion.chunk","created":1,"model":"fm","choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}]}`, f.name, rescueWord(i)))
	}
	if f.d == anthropicAPI {
		send("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"fm","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}`)
		send("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		keepAlive()
	} else {
		send("", `{"id":"c-`+f.name+`","object":"chat.completion.chunk","created":1,"model":"fm","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`)
	}
	block := 0
	for i := from; i <= rescueWords; i++ {
		switch {
		case mode == rescueCut && i == 41:
			panic(http.ErrAbortHandler) // a reset: no finish, no end
		case mode == rescueStall && i == 21:
			f.mu.Lock()
			f.stalled = time.Now()
			f.mu.Unlock()
			<-r.Context().Done()
			return
		case mode == rescuePings && i == 31:
			if f.d == anthropicAPI {
				send("content_block_stop", `{"type":"content_block_stop","index":0}`)
			}
			for end := time.Now().Add(3 * f.idle); time.Now().Before(end); {
				time.Sleep(f.idle / 3)
				keepAlive()
			}
			if f.d == anthropicAPI {
				block = 1
				send("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`)
			}
		}
		word(i, block)
	}
	n := rescueWords - from + 1
	if f.d == anthropicAPI {
		send("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, block))
		send("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":%d}}`, n))
		send("message_stop", `{"type":"message_stop"}`)
		return
	}
	send("", `{"id":"c-`+f.name+`","object":"chat.completion.chunk","created":1,"model":"fm","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
	send("", fmt.Sprintf(`{"id":"c-%s","object":"chat.completion.chunk","created":1,"model":"fm","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":%d,"total_tokens":%d}}`, f.name, n, n+5))
	send("", "[DONE]")
}

// rescueConfig is a router with primary in tier 0 and backup, whose
// provider continues a final assistant message, in tier 1, the stream
// idle timeout idle.
func rescueConfig(primary, backup *rescueFake, idle time.Duration) binConfig {
	return binConfig{custom: func() string {
		var b strings.Builder
		b.WriteString("log: {level: info, format: text}\nlimits: {request_timeout: 30s}\nauth: {api_keys_env: \"\"}\n")
		b.WriteString("routing:\n  retry: {max_attempts: 3, initial_backoff: 10ms, max_backoff: 50ms, multiplier: 2.0, jitter: 0.5}\n")
		fmt.Fprintf(&b, "  stream: {idle_timeout: %s}\n  adaptive_throttle_k: 0\n", idle)
		b.WriteString("providers:\n")
		for _, f := range []*rescueFake{primary, backup} {
			fmt.Fprintf(&b, "  - {name: %s, type: %s, base_url: %s", f.name, providerType(f.d), f.srv.URL)
			if f.d == anthropicAPI {
				fmt.Fprintf(&b, ", api_key_env: %s", anthropicKeyEnv)
			} else {
				b.WriteString("/v1")
			}
			if f == backup {
				b.WriteString(", continue_final_message: true")
			}
			b.WriteString(", first_token_timeout: 5s, timeout: 20s}\n")
		}
		fmt.Fprintf(&b, "models:\n  - name: m\n    targets:\n      - {provider: %s, model: pm, tier: 0}\n      - {provider: %s, model: bm, tier: 1}\n",
			primary.name, backup.name)
		return b.String()
	}}
}

// rescueFront is one front door of the rescue scenarios: how to send a
// streamed request for "m" and read its answer (its text, and whether it
// ended whole; else with exactly one error event).
type rescueFront struct {
	name string
	send func(p *routerProc) (reply, error)
	read func(rep reply) (text string, whole bool, err error)
}

func rescueFronts() []rescueFront {
	return []rescueFront{
		{"chat", func(p *routerProc) (reply, error) {
			return postJSON(p.client, p.api+"/v1/chat/completions",
				`{"model":"m","messages":[{"role":"user","content":"count"}],"max_tokens":100,"stream":true,"stream_options":{"include_usage":true}}`)
		}, func(rep reply) (string, bool, error) {
			text, _, whole, err := readChatStream(rep)
			return text, whole, err
		}},
		{"responses", func(p *routerProc) (reply, error) {
			return postJSON(p.client, p.api+"/v1/responses", `{"model":"m","input":"count","max_output_tokens":100,"stream":true}`)
		}, func(rep reply) (string, bool, error) {
			text, _, whole, err := readResponsesStream(rep)
			return text, whole, err
		}},
		{"messages", func(p *routerProc) (reply, error) {
			return sendMessages(p.client, p.api+"/v1/messages",
				`{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"count"}],"stream":true}`, "")
		}, func(rep reply) (string, bool, error) {
			class, text, err := checkMessages(rep, true)
			return text, class == streamDone, err
		}},
	}
}

// testBinaryRescue: per dialect, a primary in tier 0 whose streams are
// cut after 40 of 60 words, stall after 20, or only keep alive for a
// while between two blocks, and a backup in tier 1 whose provider sets
// continue_final_message. On chat, Responses and Messages (each plain or
// translated as the dialect makes it) the client gets one whole answer
// with one ending and no error event, its text the primary's words and
// then the backup's continuation; the backup received exactly the text
// the client had as the assistant's prefix; a stall is noticed within
// idle_timeout plus 1s; a stream that only keeps alive for three
// idle timeouts between two blocks completes on the primary alone
// (docs/ARCHITECTURE.md, "Streaming").
func testBinaryRescue(t *testing.T, bin string) {
	const idle = 500 * time.Millisecond
	for _, d := range []dialect{openaiAPI, anthropicAPI} {
		t.Run(d.String(), func(t *testing.T) {
			primary := newRescueFake(t, "primary", d, idle)
			backup := newRescueFake(t, "backup", d, idle)
			p := startRouter(t, bin, rescueConfig(primary, backup, idle))
			defer p.stop()
			for _, fr := range rescueFronts() {
				for _, row := range []struct {
					name   string
					mode   int32
					prefix string // what the backup must be sent ("": not called)
				}{
					{"cut after 40", rescueCut, rescueText(1, 40)},
					{"stalled after 20", rescueStall, rescueText(1, 20)},
					{"keep-alives between blocks", rescuePings, ""},
				} {
					t.Run(fr.name+"/"+row.name, func(t *testing.T) {
						primary.mode.Store(row.mode)
						callsBefore, prefixesBefore := backup.seen()
						rep, err := fr.send(p)
						if err != nil {
							t.Fatalf("request: %v", err)
						}
						if rep.status != http.StatusOK {
							t.Fatalf("status %d, want 200; body %s", rep.status, rep.body)
						}
						text, whole, err := fr.read(rep)
						if err != nil {
							t.Fatalf("malformed answer: %v; body %s", err, rep.body)
						}
						if !whole || text != rescueText(1, rescueWords) {
							t.Errorf("got whole %v, text %q; want the whole answer %q; body %s", whole, text, rescueText(1, rescueWords), rep.body)
						}
						calls, prefixes := backup.seen()
						prefixes = prefixes[len(prefixesBefore):]
						if row.prefix == "" {
							if calls != callsBefore {
								t.Errorf("the backup was called %d times, want 0", calls-callsBefore)
							}
							return
						}
						if len(prefixes) != 1 || prefixes[0] != row.prefix {
							t.Errorf("the backup was sent the prefixes %q, want exactly [%q]", prefixes, row.prefix)
						}
						if row.mode == rescueStall {
							primary.mu.Lock()
							backup.mu.Lock()
							took := backup.prefixAt.Sub(primary.stalled)
							backup.mu.Unlock()
							primary.mu.Unlock()
							if took > idle+time.Second {
								t.Errorf("the stall was rescued %s after it began, want within idle_timeout %s plus 1s", took, idle)
							}
						}
					})
				}
			}
			if log := p.stderr.String(); !strings.Contains(log, "rescued_by=backup:tier1") {
				t.Errorf("no request log line says rescued_by=backup:tier1:\n%s", log)
			}
			if got := p.metricValue(t, `llmrouter_stream_rescues_total{model="m",outcome="continued"}`); got != 6 {
				t.Errorf("stream_rescues_total continued = %v, want 6", got)
			}
		})
	}
}

// testBinaryRescueRefused: the same with a backup that refuses every
// prefill with Anthropic's 400: a cut stream ends with exactly one error
// event after the words the client had, and nothing else; the backup is
// asked once, and not again for later requests (docs/ARCHITECTURE.md,
// "Streaming": a refusal is never shown as the answer).
func testBinaryRescueRefused(t *testing.T, bin string) {
	const idle = 500 * time.Millisecond
	for _, d := range []dialect{openaiAPI, anthropicAPI} {
		t.Run(d.String(), func(t *testing.T) {
			primary := newRescueFake(t, "primary", d, idle)
			backup := newRescueFake(t, "backup", d, idle)
			backup.refuse.Store(true)
			primary.mode.Store(rescueCut)
			p := startRouter(t, bin, rescueConfig(primary, backup, idle))
			defer p.stop()
			for _, fr := range rescueFronts() {
				t.Run(fr.name, func(t *testing.T) {
					rep, err := fr.send(p)
					if err != nil {
						t.Fatalf("request: %v", err)
					}
					text, whole, err := fr.read(rep)
					if err != nil {
						t.Fatalf("malformed answer: %v; body %s", err, rep.body)
					}
					if rep.status != http.StatusOK || whole || text != rescueText(1, 40) {
						t.Errorf("got status %d, whole %v, text %q; want one error event after %q; body %s",
							rep.status, whole, text, rescueText(1, 40), rep.body)
					}
					if strings.Contains(string(rep.body), "prefill") {
						t.Errorf("the refusal reached the client: %s", rep.body)
					}
				})
			}
			if calls, prefixes := backup.seen(); calls != 1 || len(prefixes) != 1 {
				t.Errorf("the backup was called %d times (%d prefilled), want once", calls, len(prefixes))
			}
			if got := p.metricValue(t, `llmrouter_stream_rescues_total{model="m",outcome="refused"}`); got != 1 {
				t.Errorf("stream_rescues_total refused = %v, want 1", got)
			}
		})
	}
}
