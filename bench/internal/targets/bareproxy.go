package targets

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/llmrouter/llmrouter/bench/internal/proc"
	"github.com/llmrouter/llmrouter/bench/internal/upstream"
)

// BareProxyRole is the -role value the bench re-executes itself with to
// serve the bare proxy; it then calls ServeBareProxy.
const BareProxyRole = "httputil"

// ServeBareProxy serves the minimal reverse proxy the router is compared
// with: httputil.ReverseProxy to target, flushing every write (what
// streaming needs), with an idle pool as large as the load's concurrency.
// For an https target, the transport trusts the CA in caFile and speaks
// HTTP/2 when the upstream offers it, as a Go client's default transport
// would.
//
// Full duplex is on because without it a fast stream is sometimes cut
// (golang/go#40747): writing the response headers makes the HTTP/1 server
// close the inbound body while the transport may still read it once more
// to check its length, and the failed read tears down the upstream
// connection mid-answer.
func ServeBareProxy(ctx context.Context, ln net.Listener, target, caFile string) error {
	u, err := parseLoopbackURL(target)
	if err != nil {
		return err
	}
	tlsConfig, err := upstream.ClientTLS(caFile)
	if err != nil {
		return err
	}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u) },
		FlushInterval: -1,
		Transport: &http.Transport{
			MaxIdleConns:        2048,
			MaxIdleConnsPerHost: 2048,
			IdleConnTimeout:     90 * time.Second,
			TLSClientConfig:     tlsConfig,
			ForceAttemptHTTP2:   true,
		},
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, r)
	})
	return proc.ServeUntil(ctx, &http.Server{Handler: h}, ln)
}

// parseLoopbackURL parses s and refuses any host but 127.0.0.1: the bench
// never sends a byte off the machine.
func parseLoopbackURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("parsing upstream url: %w", err)
	}
	if u.Hostname() != "127.0.0.1" {
		return nil, fmt.Errorf("upstream url %q: only 127.0.0.1 is allowed", s)
	}
	return u, nil
}
