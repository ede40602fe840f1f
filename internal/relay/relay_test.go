package relay

import (
	"io"
	"net/http/httptest"
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
