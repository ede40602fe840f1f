package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
	"github.com/llmrouter/llmrouter/internal/jsonscan"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/sse"
)

// errNoDone is the cause of a stream that ended without "data: [DONE]"
// before every choice had its finish reason. It wraps
// io.ErrUnexpectedEOF, never io.EOF, so nobody mistakes the cut for a
// clean end.
var errNoDone = fmt.Errorf("stream ended without [DONE] before every choice finished: %w", io.ErrUnexpectedEOF)

// sseBody is what both stream kinds (chat's and the Responses API's)
// share: the provider's SSE body read one event at a time, the sticky end
// of the stream, and the usage it reported. Its methods and the kinds'
// Next belong to one goroutine (the proxy's relay); to stop a Next
// blocked on the network, cancel the attempt's context.
type sseBody struct {
	ctx    context.Context // the attempt's context: decides Canceled vs Timeout vs Network
	body   io.ReadCloser
	rd     *sse.Reader
	what   string
	usage  outcome.Usage
	err    error // sticky: io.EOF after the stream's proper end, or the classified failure
	closed bool
}

func newSSEBody(ctx context.Context, body io.ReadCloser, what string) sseBody {
	return sseBody{ctx: ctx, body: body, rd: sse.NewReader(body), what: what}
}

// Usage is the latest usage the stream reported; zero until an event
// carried one.
func (s *sseBody) Usage() outcome.Usage { return s.usage }

// Close releases the upstream connection. It is idempotent. A stream
// closed before its end drops the connection rather than reading on: a
// provider may keep a stream open for minutes.
// Next after Close reports outcome.Canceled (the caller gave up on it).
func (s *sseBody) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.err == nil {
		s.err = &outcome.Error{Kind: outcome.Canceled, Message: s.what + ": stream closed", Err: errStreamClosed}
	}
	return s.body.Close()
}

var errStreamClosed = errors.New("stream closed by the caller")

// Pending reports whether the next payload is probably already read from
// the connection (a whole data event is buffered), so the relay may hold
// its flush. A wrong "true" only delays a flush until that event arrives.
func (s *sseBody) Pending() bool { return !s.closed && s.err == nil && s.rd.Pending() }

// stream yields the data payloads of an OpenAI chat SSE answer unchanged.
type stream struct {
	sseBody
	// hideUsage drops the usage-only chunk (choices: []) the adapter asked
	// for on the client's behalf; its usage is still recorded.
	hideUsage bool
	target    string // the model asked for
	// modelLooks counts the chunks read for a model name (see readModel).
	modelLooks uint8
	// fin is what the chunks said of their choices' ends: a body that
	// ends cleanly without [DONE] after every choice finished is whole.
	fin provider.Finishes
}

var _ provider.Stream = (*stream)(nil)

func newStream(ctx context.Context, body io.ReadCloser, what, target string) *stream {
	return &stream{sseBody: newSSEBody(ctx, body, what), target: target}
}

// maxModelLooks bounds the chunks read for a model name: a server whose
// chunks name none costs that many lookups, not one per chunk.
const maxModelLooks = 4

// readModel records the model a chunk names until one does. Every chunk
// names it, near its start, and the same; Azure's first chunk (its prompt
// filter results) names "".
func (s *stream) readModel(data []byte) {
	if s.usage.Model != "" || s.modelLooks >= maxModelLooks {
		return
	}
	s.modelLooks++
	s.usage.Model = models.Name(gjson.Get(unsafeString(data), "model").Str, s.target)
}

// Next returns the next data payload, valid until the next call. It
// returns io.EOF once, and from then on, after "data: [DONE]", or when the
// body ends cleanly after every choice it named has its finish reason
// (several self-hosted servers and proxies send no [DONE];
// docs/ARCHITECTURE.md, "Streaming"). A body that ends before that, or
// fails, gives a classified error (a cut is outcome.Network; a canceled
// ctx keeps its cause); an event whose JSON carries a top-level "error"
// gives the kind ClassifyError reads from it. Events without data
// (comments, pings, bare event names) are skipped.
func (s *stream) Next() ([]byte, error) {
	if s.err != nil {
		return nil, s.err
	}
	for {
		ev, err := s.rd.Next()
		if err != nil {
			if err == io.EOF {
				if s.fin.Whole() {
					s.err = io.EOF
					return nil, io.EOF
				}
				err = errNoDone
			}
			s.err = provider.TransportError(s.ctx, s.what+" (stream)", err)
			return nil, s.err
		}
		data := ev.Data
		if len(data) == 0 {
			continue
		}
		if sse.IsDone(data) {
			s.err = io.EOF
			return nil, io.EOF
		}
		if err := s.check(data); err != nil {
			s.err = err
			return nil, err
		}
		s.readModel(data)
		s.readFinishes(data)
		if s.readUsage(data) && s.hideUsage && gjson.GetBytes(data, "choices.#").Int() == 0 {
			continue
		}
		return data, nil
	}
}

// check returns the error a chunk is, nil for a chunk to relay. (It is
// a function of its own to keep Next's frame small: Next waits on every
// stream's goroutine, whose stack keeps the size it grew to;
// docs/BENCHMARKS.md, "Memory per stream".)
func (s *stream) check(data []byte) error {
	if !jsoncheck.Valid(data) {
		// A chunk the client could not parse must not be relayed;
		// before the commit point this fails over.
		return fmt.Errorf("%s (stream): %w", s.what, &outcome.Error{
			Kind: outcome.ServerError, Message: "invalid JSON in stream event: " + plainMessage(data)})
	}
	if hasErrorField(data) {
		// A 200 stream carries no error status; the event's own code
		// and type decide.
		e := ClassifyError(0, nil, data, time.Time{})
		if e.Message == "" {
			e.Message = "an error occurred during streaming"
		}
		return fmt.Errorf("%s (stream): %w", s.what, e)
	}
	return nil
}

// readFinishes records the choices a chunk names and those it finishes.
// The byte scans settle the common chunk, one choice of index 0 without a
// finish reason, without gjson; a chunk with a finish reason, or an index
// other than 0 (a second choice, or a tool call's), is read whole. A scan
// that errs (a key spelled with escapes, one inside a string) errs toward
// reading the chunk whole, or toward a choice 0 that is not finished: a
// clean end is never taken for whole on a scan's word.
func (s *stream) readFinishes(data []byte) {
	zero, other := false, false
	for v := nextValue(data, `"index"`, 5); v != nil; v = nextValue(v, `"index"`, 5) {
		if v[0] == '0' && (len(v) == 1 || !isNumberByte(v[1])) {
			zero = true
		} else {
			other = true
			break
		}
	}
	if !other && !hasFinish(data) {
		if zero {
			s.fin.Saw(0)
		}
		return
	}
	// Read as gjson's ForEach over "choices" reads it (a value that is
	// not an array or object is one choice with neither key), without
	// gjson: its number parse would grow the stream's goroutine past
	// 8 KiB for good (docs/BENCHMARKS.md, "Memory per stream").
	choices := jsonscan.Fields(unsafeString(data), "choices")[0]
	if choices == "" {
		return
	}
	if choices[0] != '[' && choices[0] != '{' {
		s.fin.Saw(0)
		return
	}
	pos := 0
	for w := jsonscan.Walk(choices, 0); w.Next(); {
		f := jsonscan.Fields(w.Val(), "index", "finish_reason")
		i := pos
		if idx := f[0]; idx != "" && (idx[0] == '-' || '0' <= idx[0] && idx[0] <= '9') {
			i = int(jsonscan.AsInt(idx))
		}
		pos++
		if fr := f[1]; jsonscan.IsString(fr) && jsonscan.Unquote(fr) != "" {
			s.fin.Finish(i)
		} else {
			s.fin.Saw(i)
		}
	}
}

// hasFinish reports whether data has a "finish_reason" key whose value is
// not null.
func hasFinish(data []byte) bool {
	for v := nextValue(data, `"finish_reason"`, 7); v != nil; v = nextValue(v, `"finish_reason"`, 7) {
		if !bytes.HasPrefix(v, []byte("null")) {
			return true
		}
	}
	return false
}

// nextValue finds the next member of data whose key is key and returns
// data from its value on (not empty), or nil when there is none. The
// search looks for key[rare], a byte that is rare in a chunk, with
// bytes.IndexByte, which skips ahead fast (bytes.Index on a key that
// begins with a quote costs several times as much). As in
// hasUsageObject, a key with bare quotes is always a key or a whole value.
func nextValue(data []byte, key string, rare int) []byte {
	for {
		i := bytes.IndexByte(data, key[rare])
		if i < 0 {
			return nil
		}
		start := i - rare
		if start < 0 || len(data)-start < len(key) || string(data[start:start+len(key)]) != key {
			data = data[i+1:]
			continue
		}
		data = data[start+len(key):]
		rest := skipSpace(data)
		if len(rest) == 0 || rest[0] != ':' {
			continue
		}
		if rest = skipSpace(rest[1:]); len(rest) > 0 {
			return rest
		}
		return nil
	}
}

// skipSpace drops JSON whitespace from the front of b (bytes.TrimLeft
// builds its set of four on every call).
func skipSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r' || b[0] == '\n') {
		b = b[1:]
	}
	return b
}

func isNumberByte(c byte) bool { return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' }

// readUsage records the usage of a chunk that has a "usage" object, and
// reports whether it had one (with
// include_usage, the last chunk before [DONE]; vLLM's continuous usage
// stats, every chunk). Counts are cumulative, so the latest wins. The byte
// checks keep the common chunk, "usage":null or none, free of gjson.
func (s *stream) readUsage(data []byte) bool {
	if !hasUsageObject(data) {
		return false
	}
	// Read as gjson's Get reads it, without gjson (see readFinishes).
	u := jsonscan.Fields(unsafeString(data), "usage")[0] // read at once: numbers only
	if u == "" || u[0] != '{' {
		return false // the object found was nested, not the chunk's own usage
	}
	f := jsonscan.Fields(u, "prompt_tokens", "completion_tokens", "prompt_tokens_details")
	if f[0] != "" {
		s.usage.PromptTokens = jsonscan.AsInt(f[0])
	}
	if f[1] != "" {
		s.usage.CompletionTokens = jsonscan.AsInt(f[1])
	}
	if c := jsonscan.Fields(f[2], "cached_tokens")[0]; c != "" {
		s.usage.CachedInput = jsonscan.AsInt(c)
	}
	return true
}

// hasUsageObject reports whether data has a "usage" key, at any depth,
// whose value is an object.
func hasUsageObject(data []byte) bool {
	for v := nextValue(data, `"usage"`, 4); v != nil; v = nextValue(v, `"usage"`, 4) {
		if v[0] == '{' {
			return true
		}
	}
	return false
}
