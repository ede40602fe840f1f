package provider

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

// Transport timeouts that do not depend on the provider's config.
const (
	dialTimeout         = 5 * time.Second
	tlsHandshakeTimeout = 10 * time.Second
	idleConnTimeout     = 90 * time.Second
	// MaxErrorBody bounds how much of an error response is read.
	MaxErrorBody = 64 << 10
)

// NewHTTPClient returns the client one provider uses: its own connection
// pool sized to the bulkhead, bounded dial and TLS handshake, and a
// response-header timeout of the attempt timeout (a non-stream answer sends
// its headers only when the completion is done). The client itself has no
// overall Timeout: a stream may last as long as its context allows.
func NewHTTPClient(cfg Config) *http.Client {
	cfg = cfg.WithDefaults()
	d := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          cfg.MaxConcurrency,
		MaxIdleConnsPerHost:   cfg.MaxConcurrency,
		IdleConnTimeout:       idleConnTimeout,
		TLSHandshakeTimeout:   tlsHandshakeTimeout,
		ResponseHeaderTimeout: cfg.Timeout,
		ExpectContinueTimeout: time.Second,
		// Requests are small JSON and streams are read through their own
		// buffered SSE reader: 2 KiB per connection each way (instead of
		// 4 KiB) saves memory on every open stream at no cost in syscalls
		// for typical chat payloads.
		ReadBufferSize:  2 << 10,
		WriteBufferSize: 2 << 10,
	}
	return &http.Client{
		Transport: t,
		// Providers answer API calls directly; a redirect is a
		// misconfigured base_url, and following it could leak the key.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// TransportError classifies an error from sending a request or reading its
// answer (no HTTP status to go by) into an *outcome.Error:
//   - ctx ended: its cause decides. context.Canceled (the client went away)
//     is Canceled; a deadline is Timeout; a cause that is itself an
//     *outcome.Error (the proxy's first-token or attempt timer) keeps its kind.
//   - a network timeout is Timeout; anything else (refused, reset, EOF in
//     the middle of a body) is Network.
//
// what says what was being done, e.g. "calling openai chat completions".
func TransportError(ctx context.Context, what string, err error) error {
	if err == nil {
		return nil
	}
	var oe *outcome.Error
	if errors.As(err, &oe) {
		return err
	}
	kind := outcome.Network
	msg := err.Error()
	if ctx.Err() != nil {
		cause := context.Cause(ctx)
		msg = cause.Error()
		switch {
		case errors.As(cause, &oe):
			kind = oe.Kind
		case errors.Is(cause, context.DeadlineExceeded):
			kind = outcome.Timeout
		default:
			kind = outcome.Canceled
		}
	} else {
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			kind = outcome.Timeout
		case errors.Is(err, context.DeadlineExceeded):
			kind = outcome.Timeout
		case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
			errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
			errors.Is(err, syscall.EPIPE):
			kind = outcome.Network
		}
	}
	return &outcome.Error{Kind: kind, Message: what + ": " + msg, Err: err}
}

// ReadErrorBody reads at most MaxErrorBody bytes of an error response and
// closes it.
func ReadErrorBody(resp *http.Response) []byte {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
	return b
}

// ReadBody reads a whole successful response body and closes it. A failure
// in the middle is classified like any transport error.
func ReadBody(ctx context.Context, what string, resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, TransportError(ctx, what, err)
	}
	return b, nil
}
