package relay

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/sse"
)

// slowChunks is a stream whose every payload comes after gap.
type slowChunks struct {
	chunks
	gap time.Duration
}

func (s *slowChunks) Next() ([]byte, error) {
	time.Sleep(s.gap) // the provider's silence, not a test wait
	return s.chunks.Next()
}

// pinging frames payloads as they are and pings every every.
type pinging struct{ every time.Duration }

func (pinging) Chunk(dst, p []byte) ([]byte, error) { return sse.AppendData(dst, p), nil }
func (pinging) End(dst []byte) []byte               { return append(dst, "event: end\n\n"...) }
func (pinging) Fail(dst []byte, _ outcome.Kind) []byte {
	return append(dst, "event: fail\n\n"...)
}
func (pinging) Ping(dst []byte) []byte { return append(dst, "event: ping\n\n"...) }
func (p pinging) Every() time.Duration { return p.every }

// TestPingDuringSilence: a Pinger's keep-alive events fill the provider's
// silent gaps, never after the stream's end, and the events themselves
// arrive whole and in order.
func TestPingDuringSilence(t *testing.T) {
	w := httptest.NewRecorder()
	st := &slowChunks{chunks: chunks{p: []string{"a", "b"}, end: io.EOF}, gap: 60 * time.Millisecond}
	end := Translate(w, st, nil, time.Second, pinging{every: 15 * time.Millisecond})
	if end.Kind != outcome.OK {
		t.Fatalf("end %+v", end)
	}
	body := w.Body.String()
	if n := strings.Count(body, "event: ping\n\n"); n < 2 {
		t.Errorf("got %d pings in %q, want at least 2 in 180 ms of silence at 15 ms", n, body)
	}
	if !strings.HasSuffix(body, "event: end\n\n") || strings.Index(body, "data: a") > strings.Index(body, "data: b") {
		t.Errorf("events out of order: %q", body)
	}
	time.Sleep(50 * time.Millisecond) // a timer that outlived the relay would write now
	if w.Body.String() != body {
		t.Errorf("written after the relay returned: %q", w.Body.String()[len(body):])
	}
}
