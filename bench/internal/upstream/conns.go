package upstream

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Protocols a connection's requests can arrive with, as Stats names them.
// A connection that has not carried a request yet has no protocol ("").
const (
	ProtoH1 = "h1" // HTTP/1.x, plain or TLS (ALPN http/1.1 or none)
	ProtoH2 = "h2" // HTTP/2 over TLS (ALPN h2)
)

// Stats counts the TCP connections the upstream accepted, so the bench
// can tell how many connections each proxy opens to one provider.
type Stats struct {
	Accepted int64 `json:"accepted"` // since the upstream started
	Open     int64 `json:"open"`     // accepted and not yet closed
	// By protocol, known from a connection's first request; a connection
	// that has carried none is counted under "".
	AcceptedBy map[string]int64 `json:"accepted_by"`
	OpenBy     map[string]int64 `json:"open_by"`
}

// counts is the upstream's side of Stats.
type counts struct {
	mu sync.Mutex // guards s
	s  Stats
}

func newCounts() *counts {
	return &counts{s: Stats{AcceptedBy: map[string]int64{}, OpenBy: map[string]int64{}}}
}

func (c *counts) snapshot() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.s
	s.AcceptedBy, s.OpenBy = clone(s.AcceptedBy), clone(s.OpenBy)
	return s
}

func clone(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// countingListener counts every connection it accepts, and its close.
type countingListener struct {
	net.Listener
	c *counts
}

func (l countingListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.c.mu.Lock()
	l.c.s.Accepted++
	l.c.s.Open++
	l.c.s.AcceptedBy[""]++
	l.c.s.OpenBy[""]++
	l.c.mu.Unlock()
	return &countedConn{Conn: conn, c: l.c}, nil
}

// countedConn moves from protocol "" to its own at its first request, and
// out of Open when closed.
type countedConn struct {
	net.Conn
	c      *counts
	proto  string // guarded by c.mu
	closed bool   // guarded by c.mu
}

func (cc *countedConn) Close() error {
	cc.c.mu.Lock()
	if !cc.closed {
		cc.closed = true
		cc.c.s.Open--
		cc.c.s.OpenBy[cc.proto]--
	}
	cc.c.mu.Unlock()
	return cc.Conn.Close()
}

// sawRequest records the protocol of r's connection, once.
func (cc *countedConn) sawRequest(r *http.Request) {
	proto := ProtoH1
	if r.ProtoMajor == 2 {
		proto = ProtoH2
	}
	cc.c.mu.Lock()
	defer cc.c.mu.Unlock()
	if cc.proto != "" {
		return
	}
	cc.c.s.AcceptedBy[""]--
	cc.c.s.AcceptedBy[proto]++
	if !cc.closed {
		cc.c.s.OpenBy[""]--
		cc.c.s.OpenBy[proto]++
	}
	cc.proto = proto
}

// connKey carries a request's *countedConn in its context.
type connKey struct{}

// connContext puts the *countedConn under c (itself, or under the TLS
// connection over it) into the connection's context, which HTTP/1 and
// HTTP/2 requests both inherit.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if cc, ok := c.(*countedConn); ok {
		return context.WithValue(ctx, connKey{}, cc)
	}
	return ctx
}

// counted records the protocol of each request's connection, then serves it.
func counted(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cc, ok := r.Context().Value(connKey{}).(*countedConn); ok {
			cc.sawRequest(r)
		}
		h.ServeHTTP(w, r)
	})
}

// statsHandler serves GET /stats on the control listener: the counters of
// every listener by name.
func statsHandler(all map[string]*counts) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		out := make(map[string]Stats, len(all))
		for name, c := range all {
			out[name] = c.snapshot()
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
	return mux
}

// statsTimeout bounds one read of the upstream's counters.
const statsTimeout = 5 * time.Second

// Stats reads the connection counters of the listener for name from the
// upstream's control listener (plain HTTP on its own port, so reading them
// opens no connection to a port the proxies use).
func (h *Handle) Stats(ctx context.Context, name string) (Stats, error) {
	ctx, cancel := context.WithTimeout(ctx, statsTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.statsURL, nil)
	if err != nil {
		return Stats{}, err
	}
	resp, err := h.control.Do(req)
	if err != nil {
		return Stats{}, fmt.Errorf("reading the upstream's stats: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Stats{}, fmt.Errorf("reading the upstream's stats: status %d", resp.StatusCode)
	}
	var all map[string]Stats
	if err := json.NewDecoder(resp.Body).Decode(&all); err != nil {
		return Stats{}, fmt.Errorf("reading the upstream's stats: %w", err)
	}
	s, ok := all[name]
	if !ok {
		return Stats{}, fmt.Errorf("the upstream has no listener for %s", name)
	}
	return s, nil
}

// Sub is what changed from before to s: connections accepted in between
// (by protocol) and, as they are, the connections open at s.
func (s Stats) Sub(before Stats) Stats {
	d := Stats{Accepted: s.Accepted - before.Accepted, Open: s.Open, AcceptedBy: map[string]int64{}, OpenBy: clone(s.OpenBy)}
	for k, v := range s.AcceptedBy {
		// A connection accepted before with no request then moved from ""
		// to its protocol in between: not a new one.
		if n := v - before.AcceptedBy[k]; n > 0 {
			d.AcceptedBy[k] = n
		}
	}
	return d
}
