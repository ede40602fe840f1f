package admin

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/recent"
)

// sse is one event read from a stream.
type sse struct{ name, data string }

// stream opens url's event stream; the events arrive on the channel,
// which is closed when the stream ends. The caller cancels ctx to leave.
func stream(t *testing.T, ctx context.Context, url string) (*http.Response, <-chan sse) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan sse, 64)
	if resp.StatusCode != 200 {
		resp.Body.Close()
		close(ch)
		return resp, ch
	}
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var ev sse
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[6:]
			case line == "":
				select {
				case ch <- ev:
				default: // a test that stopped reading drops events
				}
				ev = sse{}
			}
		}
	}()
	return resp, ch
}

// next returns the next event named name, within d.
func next(t *testing.T, ch <-chan sse, name string, d time.Duration) sse {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("the stream ended before a %s event", name)
			}
			if ev.name == name {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %s event within %v", name, d)
		}
	}
}

// eventServer serves e on a server whose shutdown ends its streams (the
// daemon's admin server: BaseContext and RegisterOnShutdown); readTimeout
// is the server's ReadTimeout.
func eventServer(t *testing.T, e *events, readTimeout time.Duration) *httptest.Server {
	t.Helper()
	base, cancel := context.WithCancel(context.Background())
	srv := httptest.NewUnstartedServer(e)
	srv.Config.BaseContext = func(net.Listener) context.Context { return base }
	srv.Config.RegisterOnShutdown(cancel)
	srv.Config.ReadTimeout = readTimeout
	srv.Start()
	t.Cleanup(func() { cancel(); srv.Close() })
	return srv
}

// TestEvents: a subscriber gets the state at once and then every tick,
// the ring's records so far, then new records within the coalescing
// time, never a record twice; its stream outlives the server's
// ReadTimeout.
func TestEvents(t *testing.T) {
	ring := recent.New(16)
	ring.Add(&recent.Request{ID: "before"})
	e := &events{state: func() any { return time.Now().UnixNano() }, ring: ring, tick: 20 * time.Millisecond, writeTimeout: time.Second}
	srv := eventServer(t, e, 100*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, ch := stream(t, ctx, srv.URL)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	next(t, ch, "state", time.Second)
	first := next(t, ch, "requests", time.Second)
	var got []recent.Request
	if err := json.Unmarshal([]byte(first.data), &got); err != nil || len(got) != 1 || got[0].ID != "before" {
		t.Fatalf("first requests event %s (%v)", first.data, err)
	}
	start := time.Now()
	q := recent.Request{ID: "<img src=x onerror=alert(1)>"}
	q.SetAsked("m\n\ndata: forged")
	ring.Add(&q)
	ev := next(t, ch, "requests", 2*time.Second)
	if d := time.Since(start); d > time.Second {
		t.Errorf("a new record took %v", d)
	}
	got = nil
	if err := json.Unmarshal([]byte(ev.data), &got); err != nil || len(got) != 1 || got[0].ID != q.ID || got[0].Asked != "m\n\ndata: forged" {
		t.Fatalf("requests event %s (%v)", ev.data, err)
	}
	// A state made 300ms after the stream began: past the server's
	// ReadTimeout (100ms), whose end would have cancelled the request.
	for {
		var at int64
		if err := json.Unmarshal([]byte(next(t, ch, "state", time.Second).data), &at); err != nil {
			t.Fatal(err)
		}
		if time.Unix(0, at).Sub(start) > 300*time.Millisecond {
			break
		}
	}
	cancel()
	waitSubs(t, e, 0)
}

// TestEventsCap: past maxSubscribers streams, one more is 503; a stream
// whose client leaves frees its place and its goroutine.
func TestEventsCap(t *testing.T) {
	e := &events{state: func() any { return nil }, ring: recent.New(4), tick: time.Hour, writeTimeout: time.Second}
	srv := eventServer(t, e, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 0; i < maxSubscribers; i++ {
		resp, ch := stream(t, ctx, srv.URL)
		if resp.StatusCode != 200 {
			t.Fatalf("stream %d: %d", i, resp.StatusCode)
		}
		next(t, ch, "state", time.Second)
	}
	resp, _ := stream(t, context.Background(), srv.URL)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("one stream too many: %d", resp.StatusCode)
	}
	cancel()
	waitSubs(t, e, 0)
	resp, ch := stream(t, t.Context(), srv.URL)
	if resp.StatusCode != 200 {
		t.Fatalf("after the others left: %d", resp.StatusCode)
	}
	next(t, ch, "state", time.Second)
}

// TestEventsShutdown: the server's Shutdown does not wait on an open
// stream: the stream ends and Shutdown returns at once.
func TestEventsShutdown(t *testing.T) {
	e := &events{state: func() any { return nil }, ring: recent.New(4), tick: time.Hour, writeTimeout: time.Second}
	srv := eventServer(t, e, 0)
	resp, ch := stream(t, context.Background(), srv.URL)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	next(t, ch, "state", time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := srv.Config.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v after %v", err, time.Since(start))
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Shutdown took %v", d)
	}
	for range ch { // the stream ends
	}
	waitSubs(t, e, 0)
}

// TestEventsSlowReader: a subscriber that stops reading is dropped once a
// write has waited the write timeout, not held forever.
func TestEventsSlowReader(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	e := &events{state: func() any { return big }, tick: time.Millisecond, writeTimeout: 200 * time.Millisecond}
	srv := eventServer(t, e, 0)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	// Never read: the socket buffers fill, a write blocks, its deadline
	// ends the stream.
	waitSubs(t, e, 1)
	waitSubs(t, e, 0)
}

// waitSubs waits until e has n subscribers.
func waitSubs(t *testing.T, e *events, n int32) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for e.subs.Load() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d subscribers, want %d", e.subs.Load(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
