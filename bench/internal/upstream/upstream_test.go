package upstream

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// TestServeCountsConnectionsByProtocol serves TLS in process: requests
// over HTTP/2 share one connection, HTTP/1.1 requests in sequence reuse
// theirs, and the counters say so by protocol.
func TestServeCountsConnectionsByProtocol(t *testing.T) {
	certs, err := WriteCerts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	clientTLS, err := ClientTLS(certs.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, control := listen(t), listen(t)
	h := &Handle{TLS: clientTLS, bases: map[string]string{"a": "https://" + ln.Addr().String()},
		statsURL: "http://" + control.Addr().String() + "/stats", control: &http.Client{Transport: &http.Transport{}}}
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, map[string]net.Listener{"a": ln}, control, Config{CertFile: certs.CertFile, KeyFile: certs.KeyFile})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()

	// Each transport its own copy: an HTTP/2 one adds "h2" to its config.
	h2 := &http.Client{Transport: &http.Transport{TLSClientConfig: clientTLS.Clone(), ForceAttemptHTTP2: true}}
	h1 := &http.Client{Transport: &http.Transport{TLSClientConfig: clientTLS.Clone()}}
	for _, c := range []*http.Client{h2, h2, h2, h1, h1} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.Base("a")+"/v1/chat/completions",
			strings.NewReader(`{"model":"bench-model","stream":true}`))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.HasSuffix(string(body), DoneEvent) {
			t.Fatalf("stream without [DONE]: %q", body)
		}
	}
	s, err := h.Stats(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if s.Accepted != 2 || s.AcceptedBy[ProtoH2] != 1 || s.AcceptedBy[ProtoH1] != 1 || s.Open != 2 {
		t.Errorf("got %+v, want 2 accepted and open: 1 h2, 1 h1", s)
	}

	h2.CloseIdleConnections()
	h1.CloseIdleConnections()
	for s.Open != 0 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
		if s, err = h.Stats(ctx, "a"); err != nil {
			t.Fatal(err)
		}
	}
	if d := s.Sub(Stats{Accepted: 1, AcceptedBy: map[string]int64{ProtoH2: 1}}); s.Open != 0 || d.Accepted != 1 || d.AcceptedBy[ProtoH1] != 1 || d.AcceptedBy[ProtoH2] != 0 {
		t.Errorf("after closing: got %+v (since one h2: %+v), want none open, one new h1", s, d)
	}
}
