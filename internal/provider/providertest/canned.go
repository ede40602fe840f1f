package providertest

import (
	"io"
	"net/http"
	"strings"
)

// Canned is an http.RoundTripper that answers every request 200 with one
// content type, body and extra headers, without a network: an adapter on
// it costs what the adapter and the router cost, not a socket's or a
// fake server's (allocation budgets, path benchmarks).
type Canned struct {
	ContentType string
	Body        string
	// Header holds extra answer headers (a provider's rate-limit
	// headers); nil means none.
	Header http.Header
}

// RoundTrip reads and closes the request's body and answers.
func (c Canned) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	h := http.Header{"Content-Type": {c.ContentType}}
	for k, v := range c.Header {
		h[k] = v
	}
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader(c.Body)), ContentLength: int64(len(c.Body)), Request: r}, nil
}
