package gemini

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
	"github.com/llmrouter/llmrouter/internal/jsonscan"
	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/sse"
)

const readingStream = "reading gemini streamGenerateContent"

// stream turns Gemini's SSE events, each a whole GenerateContentResponse,
// into OpenAI chat.completion.chunk payloads: one chunk per event that
// carries text, function calls or a finish reason. Events with only
// thoughts or only usage send nothing (their usageMetadata is still kept).
// It implements provider.Stream.
type stream struct {
	ctx          context.Context // the attempt's context; decides how a failed read is classified
	body         io.ReadCloser
	r            *sse.Reader
	now          time.Time // stream start: "created" of every chunk and error event dating
	includeUsage bool
	head         bool   // chunk's id and model fixed by the first event
	model        string // the first event's modelVersion; "" when it named none

	// chunk is the payload every event fills in and enc encodes into buf,
	// reused: its id and model are fixed by the first event, its choices
	// are rebuilt per event in a reused slice. Strings a choice takes from
	// an event point into the event and are cleared once it is encoded.
	chunk   openaiwire.ChatCompletionChunk
	texts   []string // the choices' delta contents, by position in chunk.Choices
	enc     openaiwire.Encoder
	buf     []byte // the payload handed out by Next, reused
	content string // "": the content of a forced finish's delta

	// Per choice (candidate) index, grown on demand up to maxChoices.
	roleSent  []bool // delta.role went out
	toolCalls []int  // function calls emitted so far: the next tool_calls index

	// fin is what the events said of their candidates' ends: the end of
	// the body is a whole answer once every candidate seen has its
	// finishReason (or the prompt was blocked).
	fin       provider.Finishes
	usageSent bool
	usage     usage
	err       error // sticky: once set, every Next returns it
	closed    bool
}

// newStream is the stream of the answer resp. Its headers are not read
// after its status: a chunked body (internal/h1's framing, as
// net/http's) keeps its *http.Response (for trailers) for the stream's
// life, and with it the header map and the request it answers, which
// newStream drops (docs/BENCHMARKS.md, "Memory per stream").
func newStream(ctx context.Context, resp *http.Response, model string, includeUsage bool, now time.Time) *stream {
	resp.Header, resp.Request = nil, nil
	return &stream{
		ctx:          ctx,
		body:         resp.Body,
		r:            sse.NewReader(resp.Body),
		now:          now,
		includeUsage: includeUsage,
		chunk:        openaiwire.ChatCompletionChunk{Object: openaiwire.ObjectChatCompletionChunk, Created: now.Unix(), Model: model},
		buf:          make([]byte, 0, 1024),
	}
}

// Next returns the next chunk payload, valid until the next call.
func (s *stream) Next() ([]byte, error) {
	for s.err == nil {
		ev, err := s.r.Next()
		if err != nil {
			return s.end(err)
		}
		if len(ev.Data) == 0 {
			continue
		}
		ok, err := s.chunkOf(ev.Data)
		if err != nil {
			s.err = err
			return nil, err
		}
		if ok {
			return s.encode()
		}
	}
	return nil, s.err
}

// end decides what the end of the body means: once every candidate seen
// has its finish reason it is the end of a whole answer (preceded by the
// usage chunk when the client asked for one); before that it is a cut
// (docs/ARCHITECTURE.md, "Streaming").
func (s *stream) end(err error) ([]byte, error) {
	if err != io.EOF {
		s.err = provider.TransportError(s.ctx, readingStream, err)
		return nil, s.err
	}
	if !s.fin.Whole() {
		s.err = provider.TransportError(s.ctx, readingStream+": stream ended before every candidate's finish reason", io.ErrUnexpectedEOF)
		return nil, s.err
	}
	if s.includeUsage && !s.usageSent {
		// The reader stays at EOF, so the next call ends up here again
		// and returns io.EOF.
		s.usageSent = true
		s.chunk.Choices = s.chunk.Choices[:0]
		if s.chunk.Choices == nil {
			s.chunk.Choices = []openaiwire.ChunkChoice{} // [], not null
		}
		s.chunk.Usage = s.usage.wire()
		return s.encode()
	}
	s.err = io.EOF
	return nil, io.EOF
}

// encode writes s.chunk into buf and drops the choices' views into the
// event.
func (s *stream) encode() ([]byte, error) {
	var err error
	s.buf, err = s.enc.Append(s.buf[:0], &s.chunk)
	clear(s.chunk.Choices)
	clear(s.texts)
	if err != nil {
		// Only strings and numbers are encoded: this does not happen.
		s.err = &outcome.Error{Kind: outcome.ServerError, Message: readingStream + ": encoding chunk: " + err.Error(), Err: err}
		return nil, s.err
	}
	return s.buf, nil
}

// chunkOf translates one event into s.chunk; false means the event
// carried nothing to send. The event is read with jsonscan (scan.go).
func (s *stream) chunkOf(data []byte) (bool, error) {
	if !jsoncheck.Valid(data) {
		return false, malformed("stream event")
	}
	ev := readEvent(unsafeString(data))
	if ev.err != "" && ev.err[0] == '{' {
		return false, s.errorEvent(data)
	}
	if ev.usage != "" {
		s.usage = readUsage(ev.usage)
	}
	if !s.head {
		s.head = true
		s.chunk.ID = responseID(jsonscan.AsString(ev.id))
		// Interned, not the whole event; the chunks keep the model asked
		// for when Gemini names none.
		if s.model = models.Name(jsonscan.AsString(ev.model), s.chunk.Model); s.model != "" {
			s.chunk.Model = s.model
		}
	}

	s.chunk.Choices = s.chunk.Choices[:0]
	s.texts = s.texts[:0]
	if ev.candidates == "" && ev.blocked() {
		// The prompt was blocked: an empty answer, filtered.
		s.fin.Finish(0)
		s.grow(0)
		s.addChoice(0, "", "", openaiwire.FinishContentFilter)
	}
	pos := 0
	for e := each(ev.candidates); e.next(); pos++ {
		c := jsonscan.Fields(e.val, "index", "finishReason", "content")
		idx := pos
		if c[0] != "" {
			idx = int(jsonscan.AsInt(c[0]))
		}
		if idx < 0 || idx >= maxChoices {
			return false, malformed("stream event: candidate index " + strconv.Itoa(idx))
		}
		s.grow(idx)
		s.addChoice(idx, jsonscan.AsString(c[1]), get(c[2], "parts"), "")
	}
	return len(s.chunk.Choices) > 0, nil
}

// errorEvent is the failure an error event names.
func (s *stream) errorEvent(data []byte) error {
	e := ClassifyError(0, nil, data, s.now)
	e.Message = "gemini stream error event: " + e.Message
	return e
}

// addChoice adds one choice to the chunk: its delta (role on the choice's
// first delta, text joined, function calls with running indexes and whole
// arguments) and finish reason. parts is the candidate's content.parts
// (JSON text). It adds nothing when the candidate carries neither content
// nor a finish reason. forced, when not "", is the finish reason to send
// regardless of reason.
func (s *stream) addChoice(idx int, reason string, parts string, forced string) {
	var d openaiwire.Delta
	if !s.roleSent[idx] {
		d.Role = "assistant"
	}
	text, hasText := textOf(parts, true)
	for e := each(parts); e.next(); {
		p := jsonscan.Fields(e.val, "functionCall", "thought")
		if p[0] == "" || jsonscan.AsBool(p[1]) {
			continue
		}
		tc := toolCall(p[0])
		d.ToolCalls = append(d.ToolCalls, openaiwire.ToolCallDelta{Index: s.toolCalls[idx], ID: tc.ID, Type: tc.Type,
			Function: openaiwire.FunctionDelta{Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
		s.toolCalls[idx]++
	}
	content := hasText || len(d.ToolCalls) > 0
	fr := forced
	if fr == "" {
		fr = finishReason(reason, s.toolCalls[idx] > 0)
	}
	if fr != "" {
		s.fin.Finish(idx)
	} else {
		s.fin.Saw(idx)
	}
	if !content && fr == "" {
		return // nothing for this choice in this event
	}
	// texts holds the content the pointer needs. A later append may move
	// texts, but the array this pointer is into keeps its value.
	n := len(s.chunk.Choices)
	s.texts = append(s.texts, text)
	switch {
	case hasText:
		d.Content = &s.texts[n]
	case forced != "" && !content:
		d.Content = &s.content
	}
	s.roleSent[idx] = true
	s.chunk.Choices = append(s.chunk.Choices, openaiwire.ChunkChoice{Index: idx, Delta: d, FinishReason: openaiwire.Finish(fr)})
}

func (s *stream) grow(idx int) {
	for len(s.roleSent) <= idx {
		s.roleSent = append(s.roleSent, false)
		s.toolCalls = append(s.toolCalls, 0)
	}
}

// Usage is the latest usageMetadata the stream carried, and the model
// version its first event named.
func (s *stream) Usage() outcome.Usage {
	u := s.usage.outcome()
	u.Model = s.model
	return u
}

// Close releases the connection; calling it again does nothing.
func (s *stream) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.err == nil {
		s.err = &outcome.Error{Kind: outcome.Canceled, Message: "gemini stream closed"}
	}
	return s.body.Close()
}

// Pending reports whether the next payload is probably already read from
// the connection (a whole data event is buffered), so the relay may hold
// its flush. A wrong "true" only delays a flush until that event arrives.
func (s *stream) Pending() bool { return !s.closed && s.r.Pending() }
