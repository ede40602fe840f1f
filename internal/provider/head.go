package provider

import (
	"net/http"

	"github.com/llmrouter/llmrouter/internal/h1"
	"github.com/llmrouter/llmrouter/internal/tracing"
)

// Head is an answer's header fields, read one at a time: an http.Header,
// or the fields internal/h1 parsed, which make no map unless one is asked
// for (Header). The zero Head has no fields.
type Head struct {
	h http.Header
	f *h1.Fields
}

// HeadOf is h as a Head.
func HeadOf(h http.Header) Head { return Head{h: h} }

// Get is the first value of the field named key, which is in canonical
// form (textproto.CanonicalMIMEHeaderKey's; compute it once, in a var):
// the map indexed directly, as h.Get(key) does after canonicalising key on
// every call. "" when absent.
func (h Head) Get(key string) string {
	if h.f != nil {
		return h.f.Get(key)
	}
	if v := h.h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Header is the whole header, made when the fields are internal/h1's
// (once: later calls return the same map).
func (h Head) Header() http.Header {
	if h.f != nil {
		return h.f.Header()
	}
	return h.h
}

// SendHead is Send for a caller that reads the answer's header through the
// Head it returns, never resp.Header: internal/h1's transport then makes
// no header map at all (resp.Header is nil), where a provider's answer has
// 15 to 25 fields and the router reads a handful (docs/ARCHITECTURE.md,
// "Upstream connections"). Other transports answer as Send's do.
func SendHead(c *http.Client, req *http.Request) (*http.Response, Head, error) {
	if t, ok := c.Transport.(*h1.Transport); ok && c.Jar == nil && c.Timeout == 0 {
		tracing.Inject(req.Context(), req.Header)
		resp, f, err := t.RoundTripFields(req)
		if err != nil {
			return nil, Head{}, err
		}
		watch(req, resp)
		return resp, Head{f: f}, nil
	}
	resp, err := Send(c, req)
	if err != nil {
		return nil, Head{}, err
	}
	return resp, HeadOf(resp.Header), nil
}
