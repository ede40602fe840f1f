package provider

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"time"

	"github.com/llmrouter/llmrouter/internal/h1"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/tracing"
)

// Transport timeouts that do not depend on the provider's config.
const (
	dialTimeout         = 5 * time.Second
	tlsHandshakeTimeout = 10 * time.Second
	idleConnTimeout     = 90 * time.Second
	// An HTTP/2 connection silent this long is pinged; one whose ping is
	// not answered in h2PingTimeout is closed and its streams fail (and
	// fail over) instead of hanging until their attempt timeout.
	h2PingAfter   = 30 * time.Second
	h2PingTimeout = 15 * time.Second
	// MaxErrorBody bounds how much of an error response is read.
	MaxErrorBody = 64 << 10
	// DefaultMaxResponseBytes is limits.max_response_bytes when left zero:
	// an embeddings answer for 2,048 inputs is 100 to 200 MB of JSON.
	DefaultMaxResponseBytes = 256 << 20
)

// NewHTTPClient returns the client one provider uses: its own connection
// pool sized to the bulkhead, bounded dial, and no overall Timeout (a
// stream may last as long as its context allows; the attempt's context
// bounds the wait for the answer).
//
// A plain http:// provider reached without a proxy (a local model) gets
// the lean HTTP/1.1 transport of internal/h1: no goroutines of its own, the
// request written and answered in the caller's goroutine. Anything else
// (https, or an HTTP_PROXY that applies) gets net/http's Transport, with
// HTTP/2 over TLS so that a provider's streams share connections, and
// pings that find a dead HTTP/2 connection instead of letting its streams
// hang (docs/ARCHITECTURE.md, "Upstream connections").
func NewHTTPClient(cfg Config) *http.Client {
	cfg = cfg.WithDefaults()
	d := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	var rt http.RoundTripper
	if plainDirect(cfg.BaseURL) {
		rt = &h1.Transport{
			Dial:        d.DialContext,
			MaxIdle:     cfg.MaxConcurrency,
			IdleTimeout: idleConnTimeout,
			// Requests are small JSON and streams are read through their
			// own buffered SSE reader: 2 KiB per connection each way keeps
			// open streams small at no cost in syscalls for chat payloads.
			ReadBufferSize:  2 << 10,
			WriteBufferSize: 2 << 10,
		}
	} else {
		rt = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           d.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          cfg.MaxConcurrency,
			MaxIdleConnsPerHost:   cfg.MaxConcurrency,
			IdleConnTimeout:       idleConnTimeout,
			TLSHandshakeTimeout:   tlsHandshakeTimeout,
			ResponseHeaderTimeout: cfg.Timeout,
			ExpectContinueTimeout: time.Second,
			ReadBufferSize:        2 << 10,
			WriteBufferSize:       2 << 10,
			HTTP2: &http.HTTP2Config{
				SendPingTimeout: h2PingAfter,
				PingTimeout:     h2PingTimeout,
			},
		}
	}
	return &http.Client{
		Transport: rt,
		// Providers answer API calls directly; a redirect is a
		// misconfigured base_url, and following it could leak the key.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// plainDirect says whether base is an http:// URL that no proxy from the
// environment applies to.
func plainDirect(base string) bool {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return false
	}
	p, err := http.ProxyFromEnvironment(&http.Request{URL: u})
	return err == nil && p == nil
}

// causer is a context that keeps its own cause, which context.Cause
// cannot see: internal/reqctx's Ctx (an attempt's context), and the
// wrappers that carry values over it (a trace's span, a stream's
// Activity).
type causer interface{ Cause() error }

// Cause is why ctx ended: its own Cause when it keeps one, else
// context.Cause's.
func Cause(ctx context.Context) error {
	if c, ok := ctx.(causer); ok {
		return c.Cause()
	}
	return context.Cause(ctx)
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
		cause := Cause(ctx)
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

// ReadBody reads a whole successful response body, at most max bytes
// (limits.max_response_bytes; <= 0 means DefaultMaxResponseBytes), and
// closes it. An answer that is longer, or says so in its Content-Length,
// is a ServerError naming the limit, read no further than max+1 bytes:
// what a provider sends is bounded by what the router means to hold, not
// by what the provider declares (docs/ARCHITECTURE.md, "Memory"). A
// failure in the middle is classified like any transport error.
func ReadBody(ctx context.Context, what string, resp *http.Response, max int64) ([]byte, error) {
	defer resp.Body.Close()
	if max <= 0 {
		max = DefaultMaxResponseBytes
	}
	if resp.ContentLength > max {
		return nil, tooLong(what, max)
	}
	b, err := readAtMost(resp.Body, max+1, resp.ContentLength)
	if err != nil {
		return nil, TransportError(ctx, what, err)
	}
	if int64(len(b)) > max {
		return nil, tooLong(what, max)
	}
	return b, nil
}

// sizeHint bounds the buffer a declared Content-Length makes at once: the
// length is the provider's word, memory is the router's.
const sizeHint = 1 << 20

// readAtMost reads r to its end or to limit bytes, whichever comes first,
// into a buffer made for size, the length the answer declares (-1:
// unknown), up to sizeHint: a whole answer of a declared length is read
// in one allocation of its size, where io.ReadAll starts at 512 bytes
// and doubles (and io.LimitReader is one allocation more).
func readAtMost(r io.Reader, limit, size int64) ([]byte, error) {
	n := int64(512)
	if size >= 0 {
		n = min(size, sizeHint) + 1 // + 1: room for the read that finds the end
	}
	b := make([]byte, 0, min(n, limit))
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow
		}
		m, err := r.Read(b[len(b):min(int64(cap(b)), limit)])
		b = b[:len(b)+m]
		switch {
		case int64(len(b)) >= limit, err == io.EOF:
			return b, nil
		case err != nil:
			return b, err
		}
	}
}

func tooLong(what string, max int64) *outcome.Error {
	return &outcome.Error{Kind: outcome.ServerError,
		Message: what + ": the answer is longer than limits.max_response_bytes (" + strconv.FormatInt(max, 10) + " bytes)"}
}

// Send sends req with c's transport directly, without http.Client.Do's
// redirect loop, request copy and URL clone: a provider's client follows
// no redirect (a redirect is a misconfigured base_url and its answer is the
// attempt's answer), keeps no cookies and has no overall timeout (the
// attempt's context bounds it), so Do would cost every attempt time and
// allocations for nothing. A client with a cookie jar or a Timeout (a
// test's, say) still goes through Do. As with Do, req's body is closed
// whatever happens.
//
// Every adapter's request goes out here, so this is where the attempt's
// trace context joins it: the traceparent (and tracestate) of the span
// req's context carries, the attempt's (docs/ARCHITECTURE.md, "Tracing");
// nothing when tracing is off.
func Send(c *http.Client, req *http.Request) (*http.Response, error) {
	tracing.Inject(req.Context(), req.Header)
	if c.Transport == nil || c.Jar != nil || c.Timeout != 0 {
		resp, err := c.Do(req)
		if err == nil {
			watch(req, resp)
		}
		return resp, err
	}
	resp, err := c.Transport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp == nil {
		return nil, errors.New("transport returned neither a response nor an error")
	}
	watch(req, resp)
	return resp, nil
}

// watch reads resp's body through the Activity req's context lends, if
// any (a stream attempt's: docs/ARCHITECTURE.md, "Streaming").
func watch(req *http.Request, resp *http.Response) {
	if a, _ := req.Context().Value(ActivityKey{}).(*Activity); a != nil {
		resp.Body = a.attach(resp.Body)
	}
}
