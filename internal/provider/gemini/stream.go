package gemini

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

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

	id    []byte // `"chatcmpl-…"` quoted, fixed by the first event
	model []byte // quoted model, fixed by the first event's modelVersion or the request
	head  bool   // id and model fixed

	// Per choice (candidate) index, grown on demand up to maxChoices.
	roleSent  []bool // delta.role went out
	toolCalls []int  // function calls emitted so far: the next tool_calls index

	finished  bool // an event carried a finishReason (or a prompt block)
	usageSent bool
	usage     usage
	buf       []byte // the payload handed out by Next, reused
	err       error  // sticky: once set, every Next returns it
	closed    bool
}

func newStream(ctx context.Context, resp *http.Response, model string, includeUsage bool, now time.Time) *stream {
	return &stream{
		ctx:          ctx,
		body:         resp.Body,
		r:            sse.NewReader(resp.Body),
		now:          now,
		includeUsage: includeUsage,
		model:        provider.AppendJSONString(nil, model),
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
		ok, err := s.chunk(ev.Data)
		if err != nil {
			s.err = err
			return nil, err
		}
		if ok {
			return s.buf, nil
		}
	}
	return nil, s.err
}

// end decides what the end of the body means: after a finish reason it is
// the end of a whole answer (preceded by the usage chunk when the client
// asked for one); before one it is a cut.
func (s *stream) end(err error) ([]byte, error) {
	if err != io.EOF {
		s.err = provider.TransportError(s.ctx, readingStream, err)
		return nil, s.err
	}
	if !s.finished {
		s.err = provider.TransportError(s.ctx, readingStream+": stream ended before a finish reason", io.ErrUnexpectedEOF)
		return nil, s.err
	}
	if s.includeUsage && !s.usageSent {
		// The reader stays at EOF, so the next call ends up here again
		// and returns io.EOF.
		s.usageSent = true
		s.buf = s.appendHead(s.buf[:0])
		s.buf = append(s.buf, `[],"usage":`...)
		s.buf = appendUsage(s.buf, s.usage)
		s.buf = append(s.buf, '}')
		return s.buf, nil
	}
	s.err = io.EOF
	return nil, io.EOF
}

// chunk translates one event into s.buf; false means the event carried
// nothing to send.
func (s *stream) chunk(data []byte) (bool, error) {
	if !gjson.ValidBytes(data) {
		return false, malformed("stream event")
	}
	res := gjson.ParseBytes(data)
	if res.Get("error").IsObject() {
		e := ClassifyError(0, nil, data, s.now)
		e.Message = "gemini stream error event: " + e.Message
		return false, e
	}
	if u := res.Get("usageMetadata"); u.Exists() {
		s.usage = readUsage(u)
	}
	if !s.head {
		s.head = true
		s.id = append(s.id, `"chatcmpl-`...)
		if rid := res.Get("responseId").String(); rid != "" {
			s.id = appendEscaped(s.id, rid)
		} else {
			s.id = appendRandomHex(appendRandomHex(s.id))
		}
		s.id = append(s.id, '"')
		if mv := res.Get("modelVersion").String(); mv != "" {
			s.model = provider.AppendJSONString(s.model[:0], mv)
		}
	}

	s.buf = s.appendHead(s.buf[:0])
	s.buf = append(s.buf, '[')
	start := len(s.buf)
	var err error
	cands := res.Get("candidates")
	if !cands.Exists() && res.Get("promptFeedback.blockReason").Exists() {
		// The prompt was blocked: an empty answer, filtered.
		s.finished = true
		s.grow(0)
		s.buf = s.appendChoice(s.buf, 0, "", gjson.Result{}, "content_filter")
	}
	pos := 0
	cands.ForEach(func(_, c gjson.Result) bool {
		idx := candidateIndex(c, pos)
		pos++
		if idx < 0 || idx >= maxChoices {
			err = malformed("stream event: candidate index " + strconv.Itoa(idx))
			return false
		}
		s.grow(idx)
		mark := len(s.buf)
		if mark > start {
			s.buf = append(s.buf, ',')
		}
		before := len(s.buf)
		s.buf = s.appendChoice(s.buf, idx, c.Get("finishReason").String(), c.Get("content.parts"), "")
		if len(s.buf) == before {
			s.buf = s.buf[:mark] // nothing for this choice in this event
		}
		return true
	})
	if err != nil {
		return false, err
	}
	if len(s.buf) == start {
		return false, nil
	}
	s.buf = append(s.buf, "]}"...)
	return true, nil
}

// appendChoice appends one choice of a chunk: its delta (role on the
// choice's first delta, text joined, function calls with running indexes
// and whole arguments) and finish reason. It appends nothing when the
// candidate carries neither content nor a finish reason. forced, when not
// "", is the finish reason to send regardless of reason.
func (s *stream) appendChoice(dst []byte, idx int, reason string, parts gjson.Result, forced string) []byte {
	mark := len(dst)
	dst = append(dst, `{"index":`...)
	dst = strconv.AppendInt(dst, int64(idx), 10)
	dst = append(dst, `,"delta":{`...)
	fields := 0
	if !s.roleSent[idx] {
		dst = append(dst, `"role":"assistant"`...)
		fields++
	}
	content := false
	hasText := false
	parts.ForEach(func(_, p gjson.Result) bool {
		if p.Get("thought").Bool() || p.Get("functionCall").Exists() {
			return true
		}
		if t := p.Get("text"); t.Type == gjson.String && t.Str != "" {
			if !hasText {
				if fields > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, `"content":"`...)
				hasText = true
				fields++
			}
			dst = appendEscaped(dst, t.Str)
		}
		return true
	})
	if hasText {
		dst = append(dst, '"')
		content = true
	}
	calls := 0
	parts.ForEach(func(_, p gjson.Result) bool {
		fc := p.Get("functionCall")
		if !fc.Exists() || p.Get("thought").Bool() {
			return true
		}
		if calls == 0 {
			if fields > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `"tool_calls":[`...)
			fields++
		} else {
			dst = append(dst, ',')
		}
		dst = appendToolCall(dst, s.toolCalls[idx], fc)
		s.toolCalls[idx]++
		calls++
		return true
	})
	if calls > 0 {
		dst = append(dst, ']')
		content = true
	}
	fr := forced
	if fr == "" {
		fr = finishReason(reason, s.toolCalls[idx] > 0)
	}
	if !content && fr == "" {
		return dst[:mark]
	}
	if forced != "" && !content {
		if fields > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `"content":""`...)
	}
	s.roleSent[idx] = true
	dst = append(dst, `},"finish_reason":`...)
	if fr == "" {
		return append(dst, "null}"...)
	}
	s.finished = true
	dst = append(dst, '"')
	dst = append(dst, fr...)
	return append(dst, `"}`...)
}

// appendHead appends the chunk's fixed fields up to `"choices":`.
func (s *stream) appendHead(dst []byte) []byte {
	dst = append(dst, `{"id":`...)
	dst = append(dst, s.id...)
	dst = append(dst, `,"object":"chat.completion.chunk","created":`...)
	dst = strconv.AppendInt(dst, s.now.Unix(), 10)
	dst = append(dst, `,"model":`...)
	dst = append(dst, s.model...)
	return append(dst, `,"choices":`...)
}

func (s *stream) grow(idx int) {
	for len(s.roleSent) <= idx {
		s.roleSent = append(s.roleSent, false)
		s.toolCalls = append(s.toolCalls, 0)
	}
}

// Usage is the latest usageMetadata the stream carried.
func (s *stream) Usage() outcome.Usage { return s.usage.outcome() }

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
