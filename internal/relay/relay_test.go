package relay

import (
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// chunks is a provider.Stream of fixed payloads, then end.
type chunks struct {
	p   []string
	end error
}

func (c *chunks) Next() ([]byte, error) {
	if len(c.p) == 0 {
		return nil, c.end
	}
	p := c.p[0]
	c.p = c.p[1:]
	return []byte(p), nil
}
func (c *chunks) Usage() outcome.Usage { return outcome.Usage{} }
func (c *chunks) Close() error         { return nil }

const (
	roleOnly = `{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`
	text     = `{"choices":[{"index":0,"delta":{"content":"hi"}}]}`
)

func TestPreambleHoldsUntilContent(t *testing.T) {
	tests := []struct {
		name     string
		in       []string
		end      error
		wantHeld int
		wantErr  bool
	}{
		{"role then text", []string{roleOnly, roleOnly, text, text}, io.EOF, 3, false},
		{"ends before content", []string{roleOnly}, io.EOF, 1, false},
		{"dies before content", []string{roleOnly}, &outcome.Error{Kind: outcome.Network, Message: "reset"}, 0, true},
		{"unknown shape is content", []string{`{"x":1}`}, io.EOF, 1, false},
		{"responses lifecycle then output", []string{`{"type":"response.created","response":{"status":"queued"}}`, `{"type":"response.queued"}`,
			`{"type":"response.in_progress"}`, `{"type":"response.output_item.added","item":{}}`, text}, io.EOF, 4, false},
		{"responses stream dies before output", []string{`{"type":"response.created"}`, `{"type":"response.in_progress"}`},
			&outcome.Error{Kind: outcome.Quota, Message: "insufficient_quota"}, 0, true},
		{"messages preamble then text", []string{
			`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":25,"output_tokens":1}}}`,
			`{"type": "ping"}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Hm"}}`,
			`{"type":"message_stop"}`}, io.EOF, 4, false},
		{"messages tool call: its delta is the content", []string{`{"type":"message_start","message":{}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}`}, io.EOF, 3, false},
		{"messages stop with nothing before it is content", []string{`{"type":"message_start","message":{}}`,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}`, `{"type":"message_stop"}`}, io.EOF, 2, false},
		{"messages stream overloaded before output", []string{`{"type":"message_start","message":{}}`, `{"type":"ping"}`},
			&outcome.Error{Kind: outcome.Overloaded, Message: "overloaded_error"}, 0, true},
		{"messages preamble past maxHeld commits", slices.Repeat([]string{`{"type":"ping"}`}, maxHeld+2), io.EOF, maxHeld, false},
		// Held by bytes too (issue 31, finding 8: 16 events of 4 MiB were
		// held, 64 MiB a stream): the event that reaches maxHeldBytes
		// commits.
		{"4 MiB events: the first commits", slices.Repeat([]string{padded(4 << 20)}, maxHeld), io.EOF, 1, false},
		{"events of a quarter of maxHeldBytes: the fourth commits", slices.Repeat([]string{padded(maxHeldBytes / 4)}, maxHeld), io.EOF, 4, false},
		{"events under a quarter: the fifth commits", slices.Repeat([]string{padded(maxHeldBytes/4 - 1)}, maxHeld), io.EOF, 5, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			held, err := Preamble(&chunks{p: tt.in, end: tt.end})
			if (err != nil) != tt.wantErr || len(held) != tt.wantHeld {
				t.Fatalf("got %d held, err %v; want %d held, error %v", len(held), err, tt.wantHeld, tt.wantErr)
			}
		})
	}
}

// padded is a ping event of n bytes.
func padded(n int) string {
	const head, tail = `{"type":"ping","pad":"`, `"}`
	return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
}

func TestStreamEnds(t *testing.T) {
	t.Run("whole", func(t *testing.T) {
		w := httptest.NewRecorder()
		end := Stream(w, &chunks{p: []string{text}, end: io.EOF}, [][]byte{[]byte(roleOnly)}, time.Second)
		body := w.Body.String()
		if end.Kind != outcome.OK || end.Err != nil || !strings.HasSuffix(body, "data: [DONE]\n\n") ||
			strings.Count(body, "data: ") != 3 || w.Header().Get("Content-Type") != "text/event-stream" {
			t.Fatalf("got %+v, %q", end, body)
		}
	})
	t.Run("cut after commit", func(t *testing.T) {
		w := httptest.NewRecorder()
		end := Stream(w, &chunks{p: []string{text}, end: &outcome.Error{Kind: outcome.Network, Message: "reset"}}, nil, time.Second)
		body := w.Body.String()
		if end.Kind != outcome.Network || end.Err == nil || strings.Contains(body, "[DONE]") ||
			!strings.Contains(body, `"code":"upstream_error"`) || strings.Count(body, "data: ") != 2 {
			t.Fatalf("got %+v, %q; want one error event and no [DONE]", end, body)
		}
	})
}

// upper is a Framer that writes each chunk upper-cased as one event.
type upper struct{ ended, failed bool }

func (u *upper) Chunk(dst, p []byte) ([]byte, error) {
	if string(p) == "bad" {
		return dst, &outcome.Error{Kind: outcome.ServerError, Message: "bad chunk"}
	}
	return append(append(append(dst, "event: x\ndata: "...), strings.ToUpper(string(p))...), "\n\n"...), nil
}
func (u *upper) End(dst []byte) []byte {
	u.ended = true
	return append(dst, "event: end\ndata: {}\n\n"...)
}
func (u *upper) Fail(dst []byte, k outcome.Kind) []byte {
	u.failed = true
	return append(dst, "event: fail\ndata: "+k.String()+"\n\n"...)
}

// TestTranslate: a Framer writes every chunk, the end and a failure; no
// [DONE] and no chat error event of the relay's own.
func TestTranslate(t *testing.T) {
	tests := []struct {
		name     string
		held, in []string
		end      error
		wantKind outcome.Kind
		wantBody string
	}{
		{"whole", []string{"a"}, []string{"b"}, io.EOF, outcome.OK,
			"event: x\ndata: A\n\nevent: x\ndata: B\n\nevent: end\ndata: {}\n\n"},
		{"cut after commit", nil, []string{"a"}, &outcome.Error{Kind: outcome.Network, Message: "reset"}, outcome.Network,
			"event: x\ndata: A\n\nevent: fail\ndata: network\n\n"},
		{"a chunk the framer cannot read", nil, []string{"a", "bad", "c"}, io.EOF, outcome.ServerError,
			"event: x\ndata: A\n\nevent: fail\ndata: server_error\n\n"},
		{"a held chunk the framer cannot read", []string{"bad"}, []string{"c"}, io.EOF, outcome.ServerError,
			"event: fail\ndata: server_error\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			var held [][]byte
			for _, h := range tt.held {
				held = append(held, []byte(h))
			}
			end := Translate(w, &chunks{p: tt.in, end: tt.end}, held, time.Second, &upper{})
			if end.Kind != tt.wantKind || w.Body.String() != tt.wantBody || w.Header().Get("Content-Type") != "text/event-stream" {
				t.Fatalf("got %v %q; want %v %q", end.Kind, w.Body.String(), tt.wantKind, tt.wantBody)
			}
		})
	}
}

// heldCheck is a stream whose first Next, the wait after the held chunks
// were written, records whether the caller's held slice still holds them.
type heldCheck struct {
	held [][]byte
	kept bool
	chunks
}

func (h *heldCheck) Next() ([]byte, error) {
	if !h.kept {
		h.kept = slices.ContainsFunc(h.held, func(p []byte) bool { return p != nil })
	}
	return h.chunks.Next()
}

// TestHeldDropped: a stream's held chunks, once written, are not kept for
// the stream's life by the slice they came in (failover.Served.Held, a
// continuation's Held): the relay drops them before its first wait.
func TestHeldDropped(t *testing.T) {
	tests := []struct {
		name string
		run  func(w *httptest.ResponseRecorder, st *heldCheck) End
	}{
		{"stream", func(w *httptest.ResponseRecorder, st *heldCheck) End { return Stream(w, st, st.held, time.Second) }},
		{"translate", func(w *httptest.ResponseRecorder, st *heldCheck) End {
			return Translate(w, st, st.held, time.Second, &upper{})
		}},
		{"rescuable", func(w *httptest.ResponseRecorder, st *heldCheck) End {
			return Rescued(w, st, st.held, time.Second, nil, &continuer{})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &heldCheck{held: [][]byte{[]byte(roleOnly), []byte(text)}, chunks: chunks{p: []string{text}, end: io.EOF}}
			w := httptest.NewRecorder()
			if end := tt.run(w, st); end.Kind != outcome.OK {
				t.Fatalf("end %+v, body %q", end, w.Body.String())
			}
			if st.kept {
				t.Error("the held chunks are kept while the stream waits")
			}
			if n := strings.Count(strings.ToLower(w.Body.String()), `"content":"hi"`); n != 2 {
				t.Errorf("body %q: %d content chunks, want 2", w.Body.String(), n)
			}
		})
	}
}
