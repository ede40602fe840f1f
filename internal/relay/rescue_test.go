package relay

import (
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/sse"
)

var errCut = &outcome.Error{Kind: outcome.Network, Message: "connection reset"}

// chatAnswer is a chat stream's payloads writing tokens: a role chunk,
// a content chunk each, the finish and the usage.
func chatAnswer(tokens []string) []string {
	out := []string{roleOnly}
	for _, tk := range tokens {
		out = append(out, `{"choices":[{"index":0,"delta":{"content":`+quote(tk)+`}}]}`)
	}
	return append(out, `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}`)
}

// messagesAnswer is a native Messages stream's payloads writing tokens
// in one text block (a second from split on, when split > 0).
func messagesAnswer(tokens []string, split int) []string {
	out := []string{`{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":3,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`, `{"type":"ping"}`}
	block := 0
	for i, tk := range tokens {
		if split > 0 && i == split {
			out = append(out, fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, block))
			block++
			out = append(out, fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, block))
		}
		out = append(out, fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, block, quote(tk)))
	}
	return append(out, fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, block),
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`, `{"type":"message_stop"}`)
}

func quote(s string) string {
	b, _ := openaiwire.Append(nil, &s)
	return string(b)
}

// events frames native Messages payloads as their events, as the
// Messages front door does.
type events struct{}

func (events) Chunk(dst, p []byte) ([]byte, error) {
	dst = append(dst, "event: "+gjson.GetBytes(p, "type").Str+"\n"...)
	return sse.AppendData(dst, p), nil
}
func (events) End(dst []byte) []byte { return dst }
func (events) Fail(dst []byte, _ outcome.Kind) []byte {
	return append(dst, "event: error\ndata: {\"type\":\"error\"}\n\n"...)
}

// continuer is a Rescuer whose model continues full: it answers the part
// after the prefix it is given, from the whitespace the prefix lost on
// (as a model continuing a trimmed prefill does), in tokens of size
// bytes. refuse: it never continues.
type continuer struct {
	full    string
	size    int
	native  bool
	refuse  bool
	asked   int
	prefix  string
	lastErr error
}

func (c *continuer) Rescue(err error, prefix string) (Continuation, bool) {
	c.asked++
	c.prefix, c.lastErr = prefix, err
	if c.refuse || !strings.HasPrefix(c.full, prefix) {
		return Continuation{}, false
	}
	rest := split(c.full[len(prefix):], c.size)
	p := chatAnswer(rest)
	if c.native {
		p = messagesAnswer(rest, 0)
	}
	return Continuation{Stream: &chunks{p: p, end: io.EOF}, Note: "continued"}, true
}

// split cuts s into tokens of at most size bytes, on rune boundaries.
func split(s string, size int) []string {
	var out []string
	for s != "" {
		n := min(size, len(s))
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// wellFormed checks a relayed body as its client reads it: one stream,
// one ending; it returns the text and whether it ended whole (else with
// exactly one error event, nothing after it).
func wellFormed(body string, native bool) (text string, whole bool, err error) {
	var b strings.Builder
	if !native {
		evs, err := parseData(body)
		if err != nil {
			return "", false, err
		}
		for i, e := range evs {
			last := i == len(evs)-1
			switch {
			case e == "[DONE]":
				if !last {
					return "", false, fmt.Errorf("[DONE] is not last")
				}
				whole = true
			case gjson.Get(e, "error").Exists():
				if !last {
					return "", false, fmt.Errorf("an error event is not last")
				}
			case !gjson.Valid(e):
				return "", false, fmt.Errorf("event %q is not JSON", e)
			default:
				b.WriteString(gjson.Get(e, "choices.0.delta.content").Str)
			}
		}
		return b.String(), whole, nil
	}
	open, next, started, stopped, failed := -1, 0, false, false, false
	for _, ev := range strings.Split(body, "\n\n") {
		if ev == "" || strings.HasPrefix(ev, ":") {
			continue
		}
		name, data, ok := strings.Cut(ev, "\n")
		name = strings.TrimPrefix(name, "event: ")
		data = strings.TrimPrefix(data, "data: ")
		if !ok || !gjson.Valid(data) || gjson.Get(data, "type").Str != name {
			return "", false, fmt.Errorf("event %q", ev)
		}
		if stopped || failed {
			return "", false, fmt.Errorf("%s after the end", name)
		}
		idx := int(gjson.Get(data, "index").Int())
		switch name {
		case "message_start":
			if started {
				return "", false, fmt.Errorf("a second message_start")
			}
			started = true
		case "content_block_start":
			if open >= 0 || idx != next {
				return "", false, fmt.Errorf("block %d starts with %d open, %d next", idx, open, next)
			}
			open, next = idx, idx+1
		case "content_block_delta":
			if idx != open {
				return "", false, fmt.Errorf("a delta to block %d, %d open", idx, open)
			}
			b.WriteString(gjson.Get(data, "delta.text").Str)
		case "content_block_stop":
			if idx != open {
				return "", false, fmt.Errorf("block %d stops, %d open", idx, open)
			}
			open = -1
		case "message_stop":
			stopped = true
		case "error":
			failed = true
		}
	}
	if !started || stopped == failed {
		return "", false, fmt.Errorf("started %v, message_stop %v, error %v", started, stopped, failed)
	}
	return b.String(), stopped, nil
}

// parseData splits a chat SSE body into its data payloads (comments
// skipped).
func parseData(body string) ([]string, error) {
	var out []string
	for _, ev := range strings.Split(body, "\n\n") {
		if ev == "" || strings.HasPrefix(ev, ":") {
			continue
		}
		p, ok := strings.CutPrefix(ev, "data: ")
		if !ok || strings.Contains(p, "\n") {
			return nil, fmt.Errorf("event %q", ev)
		}
		out = append(out, p)
	}
	return out, nil
}

// rescueRun relays payloads cut (errCut) after their first cut ones
// through rs, and returns the client's body.
func rescueRun(payloads []string, cut int, native bool, rs Rescuer) string {
	w := httptest.NewRecorder()
	var f Framer
	if native {
		f = events{}
	}
	Rescued(w, &chunks{p: payloads[:cut], end: errCut}, nil, time.Second, f, rs)
	return w.Body.String()
}

// TestRescueSplice: a stream cut after its first content goes on with
// the continuation a Rescuer gives, the client reading one answer with
// one ending; what is not free text, or what nothing continues, ends
// with one error event as before.
func TestRescueSplice(t *testing.T) {
	tokens := []string{"Hello", " there", ", ", "world", "\n\n", "Next", " line."}
	full := strings.Join(tokens, "")
	toolCall := `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":"{"}}]}}]}`
	thinking := `{"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":""}}`
	for _, tc := range []struct {
		name     string
		native   bool
		payloads []string
		cut      int
		refuse   bool
		asked    int    // Rescue calls
		prefix   string // the prefix asked for
		whole    bool
		text     string
	}{
		{name: "chat cut in a word", payloads: chatAnswer(tokens), cut: 3, asked: 1, prefix: "Hello there", whole: true, text: full},
		{name: "chat cut after whitespace", payloads: chatAnswer(tokens), cut: 5, asked: 1, prefix: "Hello there, world", whole: true, text: full},
		{name: "chat cut after the role only", payloads: chatAnswer(tokens), cut: 1, asked: 1, prefix: "", whole: true, text: full},
		{name: "chat refused", payloads: chatAnswer(tokens), cut: 4, refuse: true, asked: 1, prefix: "Hello there,", text: "Hello there, "},
		{name: "chat after the finish", payloads: chatAnswer(tokens), cut: len(tokens) + 2, asked: 0, text: full},
		{name: "chat in a tool call", payloads: append(chatAnswer(tokens[:2])[:3], toolCall), cut: 4, asked: 0, text: "Hello there"},
		{name: "chat second choice", payloads: []string{roleOnly, `{"choices":[{"index":1,"delta":{"content":"x"}}]}`}, cut: 2, asked: 0, text: "x"},
		{name: "messages cut in a block", native: true, payloads: messagesAnswer(tokens, 0), cut: 6, asked: 1, prefix: "Hello there,", whole: true, text: full},
		{name: "messages cut between blocks", native: true, payloads: messagesAnswer(tokens, 4), cut: 8, asked: 1, prefix: "Hello there, world", whole: true, text: full},
		{name: "messages cut in a thinking block", native: true, payloads: append(messagesAnswer(tokens, 0)[:4], `{"type":"content_block_stop","index":0}`, thinking), cut: 6, asked: 0, text: "Hello"},
		{name: "messages after the stop reason", native: true, payloads: messagesAnswer(tokens, 0), cut: 3 + len(tokens) + 2, asked: 0, text: full},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := &continuer{full: full, size: 3, native: tc.native, refuse: tc.refuse}
			body := rescueRun(tc.payloads, tc.cut, tc.native, rs)
			text, whole, err := wellFormed(body, tc.native)
			if err != nil {
				t.Fatalf("malformed: %v\n%s", err, body)
			}
			if rs.asked != tc.asked || (tc.asked > 0 && rs.prefix != tc.prefix) {
				t.Errorf("asked %d times for %q, want %d for %q", rs.asked, rs.prefix, tc.asked, tc.prefix)
			}
			if whole != tc.whole || text != tc.text {
				t.Errorf("got whole %v, text %q; want %v, %q\n%s", whole, text, tc.whole, tc.text, body)
			}
			if tc.asked > 0 && outcome.KindOf(rs.lastErr) != outcome.Network {
				t.Errorf("the rescuer was told %v, want the cut", rs.lastErr)
			}
		})
	}
}

// TestRescueNotAskedWithoutRescuer: Stream and Translate never keep a
// transcript; a cut ends with the one error event.
func TestRescueNotAskedWithoutRescuer(t *testing.T) {
	body := rescueRun(chatAnswer([]string{"a", "b"}), 2, false, nil)
	if text, whole, err := wellFormed(body, false); err != nil || whole || text != "a" {
		t.Fatalf("got %q, %v, %v; want one error event after %q", text, whole, err, "a")
	}
}

// FuzzRescueSplice: any answer text, cut at any point of either framing
// (chat chunks, native Messages events, in one block or two), continued
// by a model that writes the rest from the trimmed prefix on, reaches the
// client as one well-formed stream with one ending whose text is the
// whole answer; a cut that is not free text ends with one error event.
func FuzzRescueSplice(f *testing.F) {
	f.Add("Hello there, world\n\nNext line.", uint8(3), uint8(4), false, uint8(0))
	f.Add("a  b \t c", uint8(1), uint8(2), true, uint8(2))
	f.Add(" \n ", uint8(1), uint8(1), true, uint8(0))
	f.Add(`quote " and \ back`, uint8(5), uint8(3), false, uint8(1))
	f.Fuzz(func(t *testing.T, full string, size, cut uint8, native bool, split uint8) {
		if full == "" || !utf8.ValidString(full) || size == 0 {
			return
		}
		tokens := split2(full, int(size))
		payloads := chatAnswer(tokens)
		if native {
			payloads = messagesAnswer(tokens, int(split)%len(tokens))
		}
		n := 1 + int(cut)%(len(payloads)-1)
		rs := &continuer{full: full, size: int(size)%7 + 1, native: native}
		body := rescueRun(payloads, n, native, rs)
		text, whole, err := wellFormed(body, native)
		if err != nil {
			t.Fatalf("malformed: %v\n%s", err, body)
		}
		if whole && text != full {
			t.Fatalf("whole answer %q, want %q\n%s", text, full, body)
		}
		if !whole && rs.asked > 0 {
			t.Fatalf("asked and continued, yet not whole\n%s", body)
		}
	})
}

// split2 is split, for the fuzz target's name clash with its argument.
func split2(s string, size int) []string { return split(s, size) }
