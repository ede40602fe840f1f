package e2e

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/provider/bedrock/bedrocktest"
)

// testBinaryBounds: what a provider sends is bounded by what the router
// means to hold, never by what the provider declares (docs/ARCHITECTURE.md,
// "Memory"; issue 31, finding 3).
func testBinaryBounds(t *testing.T, bin string) {
	t.Run("bedrock frames declaring 4 GiB", func(t *testing.T) { testBoundsBedrockFrames(t, bin) })
	t.Run("answers over max_response_bytes", func(t *testing.T) { testBoundsResponseBytes(t, bin) })
	t.Run("large events before the commit", func(t *testing.T) { testBoundsHeldBytes(t, bin) })
}

// testBoundsHeldBytes: four Messages streams through Bedrock each open
// with message_start and sixteen 3 MiB events, wait until all four were
// sent, then end properly; every client gets its whole stream. When the
// events are pings, which hold a stream back before its commit point
// (issue 31, finding 8: the hold counted chunks, so each stream held 16
// copies, 48 MiB), the router's peak resident memory grows by no more
// than when they are text deltas, which commit the stream at once (the
// cost of relaying 3 MiB events), give or take 32 MiB: before the bytes
// bound, 307 MiB against 150.
func testBoundsHeldBytes(t *testing.T, bin string) {
	if raceEnabled {
		t.Skip("192 MiB of events through a race-enabled router outlast the client's timeout, and its heap figures differ")
	}
	const (
		streams = 4
		events  = 16
	)
	big := map[bool]string{
		true:  `{"type":"ping","pad":"` + strings.Repeat("x", 3<<20) + `"}`,
		false: `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + strings.Repeat("x", 3<<20) + `"}}`,
	}
	var held atomic.Bool
	sent := make(chan struct{}, streams)
	release := make(chan struct{})
	east := newBedrockFake(t, "us-east-1")
	east.Reply = func(r bedrocktest.Request) bedrocktest.Reply {
		if r.Op != bedrocktest.InvokeStream {
			return bedrocktest.Default(r)
		}
		evs := bedrocktest.MessagesEvents("end")
		payload := big[held.Load()]
		return bedrocktest.Reply{Raw: func(w io.Writer) error {
			write := func(ev bedrocktest.Event) error {
				_, err := w.Write(bedrocktest.Frame(bedrocktest.InvokeStream, ev))
				w.(http.Flusher).Flush()
				return err
			}
			if err := write(evs[0]); err != nil { // message_start
				return err
			}
			if err := write(evs[1]); err != nil { // content_block_start
				return err
			}
			for range events {
				if err := write(bedrocktest.Event{Payload: payload}); err != nil {
					return err
				}
			}
			sent <- struct{}{}
			<-release
			for _, ev := range evs[2:] {
				if err := write(ev); err != nil {
					return err
				}
			}
			return nil
		}}
	}
	// grown runs the four streams through a router of its own and returns
	// how far its peak RSS grew above idle.
	grown := func(pings bool) int64 {
		held.Store(pings)
		release = make(chan struct{})
		p := startRouter(t, bin, binConfig{
			providers: []binProvider{{bedrock: east, name: "bedrock-east", typ: "bedrock", firstToken: 20 * time.Second}},
			models: []binModel{{name: "claude", targets: []binTarget{
				{provider: "bedrock-east", model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0"}}}},
			env: bedrockEnv(t),
		})
		defer p.stop()
		pid := p.cmd.Process.Pid
		if _, err := p.chatOK(false); err != nil { // warm up
			t.Fatal(err)
		}
		idle := rssBytes(t, pid)
		resetPeak(t, pid)
		type result struct {
			rep reply
			err error
		}
		results := make(chan result, streams)
		for range streams {
			go func() {
				rep, err := sendMessages(p.client, p.api+"/v1/messages",
					`{"model":"claude","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "")
				results <- result{rep, err}
			}()
		}
		for i := range streams {
			select {
			case <-sent:
			case r := <-results:
				close(release)
				t.Fatalf("a stream ended while %d were still opening: %d %.300v:\n%.300s\nrouter output:\n%s", streams-i, r.rep.status, r.err, r.rep.body, p.stderr)
			}
		}
		peak := peakBytes(t, pid)
		close(release)
		for range streams {
			r := <-results
			if r.err != nil {
				t.Errorf("%.300v", r.err)
				continue
			}
			if class, text, err := checkMessages(r.rep, true); class != streamDone || err != nil || !strings.HasSuffix(text, "end") {
				t.Errorf("got %d %s (%v)", r.rep.status, class, err)
			}
		}
		return peak - idle
	}
	relayed, pinged := grown(false), grown(true)
	t.Logf("peak RSS above idle with %d streams of %d 3 MiB events: %.1f MiB as text, %.1f MiB as pings held before the commit",
		streams, events, float64(relayed)/(1<<20), float64(pinged)/(1<<20))
	if pinged > relayed+32<<20 {
		t.Errorf("the held streams took %.1f MiB more than the relayed ones, want at most 32", float64(pinged-relayed)/(1<<20))
	}
}

// testBoundsResponseBytes: with limits.max_response_bytes at 1 MiB, a
// Converse answer of 1 MiB and one byte (undeclared, chunked), and one
// that declares 64 MiB, each get the client a 502 server_error; an
// answer of 1 MiB exactly is served.
func testBoundsResponseBytes(t *testing.T, bin string) {
	const limit = 1 << 20
	// answer is a Converse answer of exactly n bytes.
	answer := func(n int) string {
		head := `{"output":{"message":{"role":"assistant","content":[{"text":"`
		tail := `"}]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1}}`
		return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	}
	var size atomic.Int64
	var declare atomic.Bool
	east := newBedrockFake(t, "us-east-1")
	east.Reply = func(r bedrocktest.Request) bedrocktest.Reply {
		if r.Op != bedrocktest.Converse {
			return bedrocktest.Default(r)
		}
		body := answer(int(size.Load()))
		return bedrocktest.Reply{Raw: func(w io.Writer) error {
			if declare.Load() {
				w.(http.ResponseWriter).Header().Set("Content-Length", strconv.Itoa(64<<20))
				body = body[:len(body)/2] // and sends less
			}
			_, err := io.WriteString(w, body)
			return err
		}}
	}
	p := startRouter(t, bin, binConfig{
		providers: []binProvider{{bedrock: east, name: "bedrock-east", typ: "bedrock"}},
		limits:    "max_response_bytes: " + strconv.Itoa(limit),
		breaker:   "failure_threshold: {consecutive: 100, ratio: 0}",
		env:       bedrockEnv(t),
	})
	tests := []struct {
		name    string
		size    int
		declare bool
		want    int
	}{
		{"at the limit", limit, false, http.StatusOK},
		{"one byte over", limit + 1, false, http.StatusBadGateway},
		{"declaring 64 MiB", limit, true, http.StatusBadGateway},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			size.Store(int64(tt.size))
			declare.Store(tt.declare)
			rep, err := p.chat(false)
			if err != nil {
				t.Fatal(err)
			}
			class, err := check(&rep, false)
			if err != nil || rep.status != tt.want {
				t.Errorf("got %d %s (%v), want %d:\n%.300s", rep.status, class, err, tt.want, rep.body)
			}
			if tt.want != http.StatusOK && !strings.Contains(string(rep.body), "server_error") {
				t.Errorf("got %.300s, want a server_error", rep.body)
			}
		})
	}
	p.stop()
}

// hugeFrame writes an event-stream frame whose prelude (its CRC right)
// declares 4 GiB-16 bytes with no headers, then size bytes of its
// payload, and stops at the first write the router refuses (it closed
// the connection).
func hugeFrame(size int) func(w io.Writer) error {
	return func(w io.Writer) error {
		var prelude [12]byte
		binary.BigEndian.PutUint32(prelude[0:], 1<<32-16)
		binary.BigEndian.PutUint32(prelude[8:], crc32.ChecksumIEEE(prelude[:8]))
		if _, err := w.Write(prelude[:]); err != nil {
			return err
		}
		chunk := make([]byte, 1<<20)
		for sent := 0; sent < size; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return err
			}
		}
		return nil
	}
}

// testBoundsBedrockFrames: InvokeModelWithResponseStream (a Messages
// stream) and ConverseStream (a chat stream) each answer with a frame
// declaring 4 GiB-16 and 256 MiB of it. Before the cap the router read
// them into memory (RSS 37 to 1,079 MiB); now each client gets a clean
// error before anything was streamed, and the router's peak resident
// memory over the two stays within 20 MB of its idle size.
func testBoundsBedrockFrames(t *testing.T, bin string) {
	const sent = 256 << 20
	east := newBedrockFake(t, "us-east-1")
	east.Reply = func(r bedrocktest.Request) bedrocktest.Reply {
		if r.Op == bedrocktest.InvokeStream || r.Op == bedrocktest.ConverseStream {
			return bedrocktest.Reply{Raw: hugeFrame(sent)}
		}
		return bedrocktest.Default(r)
	}
	p := startRouter(t, bin, binConfig{
		providers: []binProvider{{bedrock: east, name: "bedrock-east", typ: "bedrock"}},
		// The failures must not open the breaker: the router serves on.
		breaker: "failure_threshold: {consecutive: 100, ratio: 0}",
		env:     bedrockEnv(t),
	})
	pid := p.cmd.Process.Pid
	if _, err := p.chatOK(false); err != nil { // warm up
		t.Fatal(err)
	}
	idle := rssBytes(t, pid)
	resetPeak(t, pid)

	rep, err := sendMessages(p.client, p.api+"/v1/messages",
		`{"model":"m","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "")
	if err != nil {
		t.Errorf("messages stream (invoke): %v", err)
	} else if class, _, err := checkMessages(rep, true); class != errorReply || err != nil || rep.status != http.StatusBadGateway {
		t.Errorf("messages stream (invoke): got %d %s (%v):\n%s", rep.status, class, err, rep.body)
	}
	if rep, err = p.chat(true); err != nil {
		t.Errorf("chat stream (converse): %v", err)
	} else if class, err := check(&rep, true); class != errorReply || err != nil || rep.status != http.StatusBadGateway {
		t.Errorf("chat stream (converse): got %d %s (%v):\n%s", rep.status, class, err, rep.body)
	}
	peak := peakBytes(t, pid)
	t.Logf("idle RSS %.1f MiB, peak over two 4 GiB-declared frames %.1f MiB", float64(idle)/(1<<20), float64(peak)/(1<<20))
	if grew := peak - idle; grew > 20<<20 {
		t.Errorf("peak RSS %.1f MiB is %.1f MiB above idle, want within 20 MB", float64(peak)/(1<<20), float64(grew)/(1<<20))
	}
	// The router serves on.
	if _, err := p.chatOK(false); err != nil {
		t.Fatal(err)
	}
	p.stop()
}

// resetPeak resets process pid's peak resident size (VmHWM) to its
// current one (proc(5): clear_refs, "5").
func resetPeak(t *testing.T, pid int) {
	t.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak RSS: %v", err)
	}
}

// peakBytes is process pid's peak resident size since resetPeak.
func peakBytes(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}
