package answer

import (
	"net/http"
	"strconv"
	"time"
	"unsafe"

	"github.com/llmrouter/llmrouter/internal/clientkeys"
	"github.com/llmrouter/llmrouter/internal/failover"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/pricing"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/reqctx"
	"github.com/llmrouter/llmrouter/internal/route"
)

// Exchange is one client request: its attempts (failover.Run) and what
// the answer, the log line and the metrics need.
type Exchange struct {
	failover.Run
	start  time.Time
	status int // what the client got; 0 until answered
	served string
	// errType is the error answer's code (its type when it has none), for
	// the request's span; target and ptype are the serving target and
	// its provider's type; hedged, that a hedge's twin served.
	errType string
	target  route.Target
	ptype   string
	hedged  bool
	// rescued lists the attempts that continued a stream after its
	// commit point ("provider:tierN", comma-separated), for the log line.
	rescued string
	// overhead is the router's own time up to the commit point; ttft the
	// time to the first byte of a stream; committed once either is set.
	overhead, ttft time.Duration
	committed      bool
	// writeTimeout bounds each write to the client (limits).
	writeTimeout time.Duration
	// API is the api label when it is not the operation's name (the
	// Responses API is sent as chat).
	API string
	// Requested is the model the client named, cut to 256 bytes (at a
	// character's start): the log line's requested_model, beside model,
	// the configured entry it matched (a pattern's name). "" until the
	// dialect read it.
	Requested string
	// Shape writes the router's own errors in the request's API shape;
	// nil means OpenAI's.
	Shape Shape
	// Key is the client key the request came with (nil until the client
	// is authenticated: then the anonymous key's counters are not
	// touched); its name is the log line's key.
	Key *clientkeys.Key
	// Usage is what the provider that served the request reported (a
	// stream's once it ended); zero until then, or when nothing was
	// served.
	Usage outcome.Usage
	// Prices are the prices of the routing state the request started
	// with (nil: the embedded list prices); Cost is what Usage cost at the
	// serving target's price, in US dollars (0 when nothing was served or
	// the target has no price).
	Prices *pricing.Table
	Cost   float64

	// Timeout is the storage of the request's context within its
	// deadline (limits.request_timeout), which the front door's dispatch
	// sets up: the exchange holds it so that it costs no allocation of
	// its own (docs/ARCHITECTURE.md, "Request contexts").
	Timeout reqctx.Ctx

	// hdr backs the answer's per-request header values (one []string of
	// one value each, hdr* below), and num the digits of its numbers
	// (numbers), so that the served answer's headers cost no allocation
	// of their own: the header map holds them while it lives.
	hdr  [hdrSlots]string
	num  [64]byte
	numN int // num's bytes in use: never written again

	// req backs the first provider.Request NewRequest hands out; reqUsed
	// says it has been.
	req     provider.Request
	reqUsed bool
}

// NewRequest returns a zero provider.Request for the exchange's attempts:
// the Exchange's own the first time, so the request a dialect reads costs
// no allocation of its own, and a new one after that (an exchange that
// dispatches more than once never shares one). It lives as long as the
// Exchange; nothing reuses it.
func (ex *Exchange) NewRequest() *provider.Request {
	if ex.reqUsed {
		return new(provider.Request)
	}
	ex.reqUsed = true
	return &ex.req
}

// The slots of Exchange.hdr.
const (
	slotID = iota
	slotLength
	slotProvider
	slotModel
	slotTier
	slotAttempts
	slotOverhead
	slotCost
	hdrSlots
)

// fieldSetter is a ResponseWriter that sets header fields outside its
// header map (internal/h1server's, the API listener's): the answer's own
// fields then cost no map entries, and a common answer's map stays within
// eight entries, two allocations where more cost four
// (docs/ARCHITECTURE.md, "The API listener").
type fieldSetter interface {
	// SetField sets key, in canonical form, to the one value v, as
	// Header()[key] = []string{v} does.
	SetField(key, v string)
}

// setHeader sets a canonical key of w's answer to the value v: outside
// the map when w takes it so, else in the map, kept in ex's slot i.
func (ex *Exchange) setHeader(w http.ResponseWriter, key string, i int, v string) {
	if fs, ok := w.(fieldSetter); ok {
		fs.SetField(key, v)
		return
	}
	ex.hdr[i] = v
	w.Header()[key] = ex.hdr[i : i+1 : i+1]
}

// number returns b, digits appended to ex.numbers(), as a string viewing
// them: bytes of num are written once, before their view exists, and
// never again; b is memory of its own when num was full.
func (ex *Exchange) number(b []byte) string {
	if len(b) <= len(ex.num)-ex.numN {
		ex.numN += len(b)
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// numbers is the unused part of num, to append a number's digits to and
// pass to number.
func (ex *Exchange) numbers() []byte { return ex.num[ex.numN:ex.numN:len(ex.num)] }

// NewExchange starts the exchange of r, an op, whose writes to the client
// are bounded by writeTimeout (limits.client_write_timeout); the answer w
// will carry says its id (X-Request-ID).
func (s *Writer) NewExchange(w http.ResponseWriter, r *http.Request, op provider.Op, writeTimeout time.Duration) *Exchange {
	ex := &Exchange{Run: failover.Run{ID: s.requestID(r), Op: op}, start: time.Now(), writeTimeout: writeTimeout}
	ex.setHeader(w, hdrRequestID, slotID, ex.ID)
	return ex
}

// requestID returns the client's X-Request-ID when it is short printable
// ASCII, else a fresh one.
func (s *Writer) requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); id != "" && len(id) <= 128 {
		ok := true
		for i := 0; i < len(id); i++ {
			if id[i] < 0x21 || id[i] > 0x7e {
				ok = false
				break
			}
		}
		if ok {
			return id
		}
	}
	var b [40]byte // one allocation: the id itself
	return string(strconv.AppendUint(append(b[:0], s.idPrefix...), s.idSeq.Add(1), 36))
}

// Upgraded records that the request was answered by switching protocols
// (101: a WebSocket connection, whose messages are requests of their
// own): its log line and metrics say 101.
func (ex *Exchange) Upgraded() { ex.status = http.StatusSwitchingProtocols }
