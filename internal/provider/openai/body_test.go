package openai

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/llmrouter/llmrouter/internal/provider"
)

// roundTripFunc is a scripted transport.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func okResponse(r *http.Request) *http.Response {
	return &http.Response{
		StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(chatAnswer)), Request: r,
	}
}

func newScriptedAdapter(tb testing.TB, rt roundTripFunc) *Adapter {
	tb.Helper()
	a, err := New(OpenAI, provider.Config{}, "sk", Config{}, &http.Client{Transport: rt})
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return a
}

// TestBodyReplay: a transport replaying the body through GetBody (a stale
// keep-alive connection) sends the same bytes twice, and every reference
// is returned once both readers are closed.
func TestBodyReplay(t *testing.T) {
	var reads []string
	var readers []*bodyReader
	a := newScriptedAdapter(t, func(r *http.Request) (*http.Response, error) {
		for i, rc := range []io.ReadCloser{r.Body, nil} {
			if i == 1 {
				var err error
				if rc, err = r.GetBody(); err != nil {
					t.Fatalf("GetBody: %v", err)
				}
			}
			b, err := io.ReadAll(rc)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			reads = append(reads, string(b))
			readers = append(readers, rc.(*bodyReader))
			_ = rc.Close()
		}
		if r.ContentLength != int64(len(reads[0])) {
			t.Errorf("ContentLength = %d, want %d", r.ContentLength, len(reads[0]))
		}
		return okResponse(r), nil
	})
	if _, err := a.Do(context.Background(), request(provider.OpChat, chatBody, "gpt-4o", false)); err != nil {
		t.Fatalf("Do: %v", err)
	}
	want := withModel(chatBody, "gpt-4o")
	if len(reads) != 2 || reads[0] != want || reads[1] != want {
		t.Errorf("reads = %q, want the body twice: %q", reads, want)
	}
	if n := readers[0].b.refs.Load(); n != 0 {
		t.Errorf("references left = %d, want 0", n)
	}
}

// TestBodyOutlivesDo: the RoundTripper contract lets the transport read
// the body after RoundTrip returned; the pooled buffer must not serve the
// next request meanwhile.
func TestBodyOutlivesDo(t *testing.T) {
	var held []io.ReadCloser
	a := newScriptedAdapter(t, func(r *http.Request) (*http.Response, error) {
		held = append(held, r.Body) // read later, as a lagging writer would
		return okResponse(r), nil
	})
	bodies := []string{chatBody, embedBody, completionBody, streamBody}
	for _, b := range bodies {
		if _, err := a.Do(context.Background(), request(provider.OpChat, b, "m-"+b[:5], false)); err != nil {
			t.Fatalf("Do: %v", err)
		}
	}
	for i, rc := range held {
		got, err := io.ReadAll(rc)
		if err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		if want := withModel(bodies[i], "m-"+bodies[i][:5]); string(got) != want {
			t.Errorf("held body %d = %s, want %s", i, got, want)
		}
		_ = rc.Close()
		if n := rc.(*bodyReader).b.refs.Load(); n != 0 {
			t.Errorf("references left on body %d = %d, want 0", i, n)
		}
	}
}

// TestBodyCloseDuringRead: HTTP/2 may close a body while a Read runs in
// another goroutine; the race detector checks the two are serialised, and
// reads after Close fail instead of touching a recycled buffer.
func TestBodyCloseDuringRead(t *testing.T) {
	b := getBody()
	b.buf = append(b.buf, strings.Repeat("x", 64<<10)...)
	r := b.reader()
	b.release() // Do's own reference

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		p := make([]byte, 16)
		for {
			if _, err := r.Read(p); err != nil {
				if err != io.EOF && err != errBodyClosed {
					t.Errorf("Read = %v, want io.EOF or errBodyClosed", err)
				}
				return
			}
		}
	}()
	_ = r.Close()
	_ = r.Close() // idempotent: must not release twice
	wg.Wait()
	if _, err := r.Read(make([]byte, 1)); err != errBodyClosed {
		t.Errorf("Read after Close = %v, want errBodyClosed", err)
	}
}

func TestBodyOverRelease(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("release without a reference did not panic")
		}
	}()
	new(body).release()
}
