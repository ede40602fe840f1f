package api

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/llmrouter/llmrouter/internal/answer"
	"github.com/llmrouter/llmrouter/internal/apierror"
	"github.com/llmrouter/llmrouter/internal/intake"
	"github.com/llmrouter/llmrouter/internal/proxy"
	"github.com/llmrouter/llmrouter/internal/responses"
	"github.com/llmrouter/llmrouter/internal/responses/store"
	"github.com/llmrouter/llmrouter/internal/responses/turn"
	"github.com/llmrouter/llmrouter/internal/responses/wire"
)

// DefaultIdleTimeout is how long a WebSocket connection may wait for its
// next message when Options.IdleTimeout is zero: the API listener's
// keep-alive idle timeout.
const DefaultIdleTimeout = 120 * time.Second

// The Responses API over WebSocket (docs/ARCHITECTURE.md, "Responses API
// over WebSocket"), as Codex speaks it (supports_websockets = true):
// GET /v1/responses upgrades; each text message is a response.create
// whose other fields are a POST /v1/responses body, and is one request
// of its own through the same path as a POST's stream (the client's key,
// the body within the limits, the attempt loop with failover before the
// first content, the one answer writer, its log line and metrics),
// answered with the stream's events as text messages; one message at a
// time, turn after turn. The connection keeps its latest response, whatever
// its store flag, for the next message's previous_response_id, as
// OpenAI's does: Codex sends only the new items then.
//
// The library is github.com/coder/websocket: RFC 6455 framing, masking,
// fragmentation, control frames and the close handshake are a protocol's
// worth of hostile-input surface, and it is already in the module graph
// (the OpenAI SDK's); compression is not negotiated (a deflated frame
// inflates past what the read limit sees, and a window per connection
// is memory the limits do not count).

// serveWebSocket handles GET /v1/responses: the upgrade, then the
// connection's messages until it closes, idles out or the router drains.
// An upgrade that carries an Origin header is refused (403) before
// anything else, whatever the auth setting: browsers apply no CORS to
// WebSockets, so any web page a developer opens could otherwise drive the
// router on its provider keys. The client's key is checked here, and again
// with each message (a reload may have revoked it).
func (s *Server) serveWebSocket(q proxy.Request, w http.ResponseWriter, r *http.Request) {
	if _, ok := r.Header["Origin"]; ok {
		q.Answer(answer.Result{Err: &apierror.Error{Status: http.StatusForbidden, Type: "invalid_request_error", Code: "origin_not_allowed",
			Message: "a WebSocket upgrade from a web page (one with an Origin header) is not accepted: the router's API is for programs, not browsers"}})
		return
	}
	if !headerHas(r.Header, "Connection", "upgrade") || !headerHas(r.Header, "Upgrade", "websocket") {
		w.Header().Set("Upgrade", "websocket")
		q.Answer(answer.Result{Err: &apierror.Error{Status: http.StatusUpgradeRequired, Type: "invalid_request_error", Code: "upgrade_required",
			Message: "GET /v1/responses is the Responses API over WebSocket: upgrade the connection (Upgrade: websocket), or POST /v1/responses"}})
		return
	}
	if !q.Authorize() {
		return
	}
	if r.Header.Get("Sec-WebSocket-Version") != "13" || r.Header.Get("Sec-WebSocket-Key") == "" {
		w.Header().Set("Sec-WebSocket-Version", "13")
		q.Answer(answer.Result{Err: apierror.BadRequest("", "the WebSocket upgrade needs Sec-WebSocket-Version: 13 and a Sec-WebSocket-Key")})
		return
	}
	if !s.open() {
		q.Answer(answer.Result{Err: &apierror.Error{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "shutting_down",
			Message: "the router is shutting down: connect again", RetryAfter: time.Second}})
		return
	}
	defer s.conns.Done()
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return // refused in the library's words; the checks above leave little
	}
	q.Ex.Upgraded()
	c := newConn(s, ws, r, q.MaxBodyBytes())
	defer c.end()
	c.serve(q, r)
}

// headerHas reports whether a comma-separated header of h lists token,
// case-insensitively.
func headerHas(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// message is one data message the connection's reader got.
type message struct {
	typ  websocket.MessageType
	body *msgBody
}

// conn is one WebSocket connection. Its reader goroutine reads each
// message's first frame, then waits until the message was read (its
// body's done); it answers pings and the close handshake meanwhile, and
// its end (the client gone, the connection broken) cancels ctx, which
// cancels the turn in flight. last is touched by the serving goroutine
// alone: the answer's framer keeps it during the turn, the next turn
// reads it.
type conn struct {
	s       *Server
	ws      *websocket.Conn
	ctx     context.Context
	cancel  context.CancelFunc
	stopped func() bool // detaches ctx from the server's stop
	msgs    chan message
	read    sync.WaitGroup // the reader goroutine
	maxBody int64          // limits.max_body_bytes at the upgrade
	// last is the connection's latest response (previous_response_id),
	// lastSize its estimate, charged to the server's budget.
	last     *store.Record
	lastSize int64
}

func newConn(s *Server, ws *websocket.Conn, r *http.Request, maxBody int64) *conn {
	ctx, cancel := context.WithCancel(r.Context())
	c := &conn{s: s, ws: ws, ctx: ctx, cancel: cancel, msgs: make(chan message), maxBody: maxBody}
	// At shutdown_timeout the turns still running are cut.
	c.stopped = context.AfterFunc(s.base, cancel)
	// A message up to the body limit, and the one byte more that tells
	// the body reader it is too large (413).
	ws.SetReadLimit(maxBody + 1)
	c.read.Add(1)
	go c.reader()
	return c
}

// reader reads the client's messages, one at a time, until the
// connection ends.
func (c *conn) reader() {
	defer c.read.Done()
	defer c.cancel()
	for {
		typ, rd, err := c.ws.Reader(c.ctx)
		if err != nil {
			return
		}
		m := message{typ: typ, body: newMsgBody(rd, func() { _ = c.ws.CloseNow() })}
		select {
		case c.msgs <- m:
		case <-c.ctx.Done():
			return
		}
		select {
		case <-m.body.done:
		case <-c.ctx.Done():
			return
		}
	}
}

// serve answers the connection's messages one at a time until it closes,
// stays idle for the idle timeout, or the router drains.
func (c *conn) serve(q proxy.Request, r *http.Request) {
	idle := time.NewTimer(c.s.idle)
	defer idle.Stop()
	for {
		var m message
		select {
		case m = <-c.msgs:
		case <-c.ctx.Done():
			return
		case <-idle.C:
			_ = c.ws.Close(websocket.StatusNormalClosure, "idle")
			return
		case <-c.s.draining:
			_ = c.ws.Close(websocket.StatusGoingAway, "the router is shutting down")
			return
		}
		if m.typ != websocket.MessageText {
			_ = c.ws.Close(websocket.StatusUnsupportedData, "send response.create as a JSON text message")
			return
		}
		status := c.turn(q, r, m)
		if !m.body.complete() {
			// The message was refused before its end (413, the body
			// budget, its read deadline): what is left of it cannot be
			// told from the next one.
			_ = c.ws.Close(closeCode(status), "message refused: "+http.StatusText(status))
			return
		}
		if c.ctx.Err() != nil {
			return
		}
		idle.Reset(c.s.idle)
	}
}

// closeCode is the close status that ends a connection whose message got
// status.
func closeCode(status int) websocket.StatusCode {
	switch status {
	case http.StatusRequestEntityTooLarge:
		return websocket.StatusMessageTooBig
	case http.StatusServiceUnavailable:
		return websocket.StatusTryAgainLater
	}
	return websocket.StatusPolicyViolation
}

// turn answers one message as a request of its own (q.Next), and returns
// the status it got.
func (c *conn) turn(q proxy.Request, up *http.Request, m message) int {
	defer m.body.stop()
	r := up.Clone(c.ctx)
	r.Body, r.ContentLength = m.body, -1
	r.Header.Del("Content-Length")
	f := newFrames(c.ctx, func(ctx context.Context, b []byte) error { return c.ws.Write(ctx, websocket.MessageText, b) }, m.body)
	t := q.Next(f, r)
	defer t.End()
	if body := t.Admit(); body != nil {
		c.s.serveMessage(t, r, body, c)
	}
	_ = f.finish()
	return f.status
}

// end closes the connection, stops its reader and gives back what its
// latest response held.
func (c *conn) end() {
	c.cancel()
	_ = c.ws.CloseNow()
	c.read.Wait()
	c.stopped()
	c.remember(nil)
}

// serveMessage answers one message whose body t admitted: a warm-up
// without a provider, any other response.create through the attempt
// loop.
func (s *Server) serveMessage(t proxy.Request, r *http.Request, body *intake.Body, c *conn) {
	msg, warmUp, aerr := decodeMessage(body.B)
	if aerr != nil {
		t.Free(body)
		t.Answer(answer.Result{Err: aerr})
		return
	}
	if warmUp {
		t.Free(body)
		t.Answer(s.warmUp(t, r, msg, c))
		return
	}
	t.Dispatch(body, func(q proxy.Request, r *http.Request, _ []byte) (proxy.Call, *apierror.Error) {
		return s.read(q, r, msg, c)
	})
}

// warmUp answers a response.create with generate: false, as OpenAI does:
// a response with no output, kept as the connection's latest (and stored
// unless store: false), that the next message continues with
// previous_response_id; no provider is called.
func (s *Server) warmUp(q proxy.Request, r *http.Request, body []byte, c *conn) answer.Result {
	d, rerr := responses.Decode(body)
	if rerr != nil {
		return answer.Result{Err: s.refusal(q.Ex, rerr)}
	}
	if aerr := q.UseModel(d.Model); aerr != nil {
		return answer.Result{Err: aerr}
	}
	tn, rerr := turn.New(r.Context(), d, c.store(s.stored), s.now)
	if rerr != nil {
		return answer.Result{Err: s.refusal(q.Ex, rerr)}
	}
	tn.Remember(c.remember)
	b := tn.Keep(nil, tn.Response(wire.StatusCompleted, "", nil, &wire.Usage{}))
	s.storeFailed(q.Ex, tn)
	return answer.Result{JSON: b}
}

// store is the store a connection's turns read: its latest response
// first, then shared; shared itself for a POST (c nil).
func (c *conn) store(shared store.Store) store.Store {
	if c == nil {
		return shared
	}
	return connStore{Store: shared, c: c}
}

// remember makes rec the connection's latest response, when its
// conversation is within limits.max_body_bytes (a larger one could not be
// sent on anyway) and within what every connection's latest may hold at
// once (responses.max_bytes, counted apart from the stored responses);
// nil gives back what the last one held.
func (c *conn) remember(rec *store.Record) {
	var size int64
	if rec != nil {
		size, _ = store.Size(rec)
	}
	c.s.lastBytes.Add(-c.lastSize)
	c.last, c.lastSize = nil, 0
	if rec == nil || size > c.maxBody {
		return
	}
	if c.s.lastBytes.Add(size) > c.s.lastMax.Load() {
		c.s.lastBytes.Add(-size)
		return
	}
	c.last, c.lastSize = rec, size
}

// connStore is a connection's view of the store of responses: its
// latest response, whatever its store flag, then the router's.
type connStore struct {
	store.Store
	c *conn
}

func (s connStore) Get(ctx context.Context, id string) (*store.Record, error) {
	if last := s.c.last; last != nil && last.ID == id {
		return last, nil
	}
	return s.Store.Get(ctx, id)
}

func (s connStore) FindItem(ctx context.Context, id string) (wire.Item, error) {
	if f, ok := s.Store.(store.ItemFinder); ok {
		return f.FindItem(ctx, id)
	}
	return wire.Item{}, store.ErrNotFound
}

var _ store.ItemFinder = connStore{}

// open counts a new connection, unless the router drains.
func (s *Server) open() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.drained {
		return false
	}
	s.conns.Add(1)
	return true
}

// Drain closes the WebSocket connections as they become idle: those
// waiting for a message now, the others once their turn is answered
// (going away, 1001); no new one is accepted. The API listener's
// http.Server calls it as it shuts down (RegisterOnShutdown): its
// Shutdown does not wait for the connections it handed over.
func (s *Server) Drain() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.drained {
		s.drained = true
		close(s.draining)
	}
}

// Shutdown drains the WebSocket connections and waits until they are
// closed; when ctx ends first (shutdown_timeout), the turns still
// running are cut and ctx's error returned.
func (s *Server) Shutdown(ctx context.Context) error {
	s.Drain()
	done := make(chan struct{})
	go func() {
		s.conns.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.stop()
		<-done
		return ctx.Err()
	}
}
