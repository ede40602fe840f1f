package gemini

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
	"github.com/llmrouter/llmrouter/internal/jsonscan"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/sse"
)

// The Gemini API served natively (provider.OpGemini): the client's
// generateContent body, the target's model in the URL, the answer and the
// stream's events as they came. Vertex AI reuses it for Google's models.

// native serves provider.OpGemini.
func (a *Adapter) native(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	model := strings.TrimPrefix(req.Model, "models/")
	body := NativeBody(req.Body, model, req.MaxOutputTokens)
	u := a.prefix + modelPath(model)
	if req.Stream {
		resp, err := a.sendNative(ctx, u+":streamGenerateContent?alt=sse", body, "calling gemini streamGenerateContent")
		if err != nil {
			return nil, err
		}
		resp.Header, resp.Request = nil, nil // not read after the status: see newStream
		return &provider.Response{Stream: NewNativeStream(ctx, resp.Body, model, a.now()), RateLimit: outcome.UnknownRateLimit}, nil
	}
	const what = "calling gemini generateContent"
	resp, err := a.sendNative(ctx, u+":generateContent", body, what)
	if err != nil {
		return nil, err
	}
	raw, err := provider.ReadBody(ctx, what, resp, a.maxResponse)
	if err != nil {
		return nil, err
	}
	usage, err := ReadNative(raw, model, a.now())
	if err != nil {
		return nil, err
	}
	return &provider.Response{Body: raw, Usage: usage, RateLimit: outcome.UnknownRateLimit}, nil
}

// sendNative is send, with an error answer's body kept (outcome.Error.Body)
// for the client: a Gemini client gets Google's own error as it came.
func (a *Adapter) sendNative(ctx context.Context, u string, body []byte, what string) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, &outcome.Error{Kind: outcome.ServerError, Message: what + ": building request: " + err.Error(), Err: err}
	}
	hr.Header.Set("Content-Type", "application/json")
	if a.key != "" {
		hr.Header.Set("X-Goog-Api-Key", a.key)
	}
	resp, err := provider.Send(a.client, hr)
	if err != nil {
		return nil, provider.TransportError(ctx, what, err)
	}
	if resp.StatusCode != http.StatusOK {
		raw := provider.ReadErrorBody(resp)
		e := ClassifyError(resp.StatusCode, resp.Header, raw, a.now())
		e.Message = what + ": " + e.Message
		e.Body = raw
		return nil, e
	}
	return resp, nil
}

// NativeBody is the generateContent body sent natively for a client's
// body (valid JSON, checked by the front door) to model: the client's
// bytes, except that generationConfig.maxOutputTokens above maxOutput
// (the target's cap, when above 0) is written as maxOutput, and, for a
// model that validates thought signatures (Gemini 3), the first
// functionCall part of each model turn that carries no thoughtSignature
// gets Google's documented sentinel "skip_thought_signature_validator"
// (https://ai.google.dev/gemini-api/docs/thought-signatures, "FAQ":
// history another model produced, as after a failover or from a
// translated answer, has none, and Gemini 3 refuses a current turn's
// function call without one). Gemini CLI sends the same sentinel itself.
// body is not modified; the result is body itself when nothing changes.
func NativeBody(body []byte, model string, maxOutput int64) []byte {
	out := body
	// set writes v at path into a copy of body, made once: SetBytes may
	// write into the slice it is given.
	set := func(path string, v any) {
		if &out[0] == &body[0] {
			out = bytes.Clone(body)
		}
		if b, err := sjson.SetBytes(out, path, v); err == nil {
			out = b
		}
	}
	if len(body) == 0 {
		return body
	}
	if maxOutput > 0 {
		if n := gjson.GetBytes(body, "generationConfig.maxOutputTokens"); n.Exists() && n.Num > float64(maxOutput) {
			set("generationConfig.maxOutputTokens", maxOutput)
		}
	}
	if !wantsThoughtSignature(model) || !bytes.Contains(body, []byte(`"functionCall"`)) {
		return out
	}
	var paths []string
	gjson.GetBytes(out, "contents").ForEach(func(ci, c gjson.Result) bool {
		if c.Get("role").Str != "model" {
			return true
		}
		c.Get("parts").ForEach(func(pi, p gjson.Result) bool {
			if !p.Get("functionCall").Exists() {
				return true
			}
			if !p.Get("thoughtSignature").Exists() {
				paths = append(paths, "contents."+strconv.Itoa(int(ci.Int()))+".parts."+strconv.Itoa(int(pi.Int()))+".thoughtSignature")
			}
			return false // only the first call of a turn's step needs one
		})
		return true
	})
	if len(paths) == 0 {
		return out
	}
	for _, p := range paths {
		set(p, skipThoughtSignature)
	}
	return out
}

// ReadNative checks a 200's GenerateContentResponse, passed on natively,
// and reads its usage and the model version that answered (model is the
// one asked for): invalid JSON is a ServerError; an error document is the
// failure it names, with Body raw.
func ReadNative(raw []byte, model string, now time.Time) (outcome.Usage, error) {
	if !jsoncheck.Valid(raw) {
		return outcome.Usage{}, malformed("generateContent answer")
	}
	res := gjson.ParseBytes(raw)
	if res.Get("error").IsObject() {
		e := ClassifyError(0, nil, raw, now)
		e.Body = raw
		return outcome.Usage{}, e
	}
	u := readUsage(res.Get("usageMetadata").Raw).outcome()
	u.Model = models.Name(res.Get("modelVersion").String(), model)
	return u, nil
}

// nativeStream yields the data payloads of a streamGenerateContent?alt=sse
// answer unchanged (provider.OpGemini), each a whole
// GenerateContentResponse, checked to be JSON. Gemini's stream has no
// terminator: a body that ends after every candidate it named has its
// finishReason (or a blocked prompt's promptFeedback) is a whole answer
// (io.EOF; provider.Finishes, as the translated stream reads it); one that
// ends before is a cut (outcome.Network). An error event is the failure
// it names, with Body its payload.
type nativeStream struct {
	ctx    context.Context
	body   io.ReadCloser
	r      *sse.Reader
	now    time.Time
	target string
	model  string
	usage  usage
	fin    provider.Finishes
	err    error // sticky
	closed bool
}

var _ provider.Stream = (*nativeStream)(nil)

// NewNativeStream returns the native stream of a streamGenerateContent
// answer's body to model, bound to ctx until Close; now dates an error
// event's quota reset.
func NewNativeStream(ctx context.Context, body io.ReadCloser, model string, now time.Time) provider.Stream {
	return &nativeStream{ctx: ctx, body: body, r: sse.NewReader(body), now: now, target: model}
}

// Next returns the next event's payload, valid until the next call.
func (s *nativeStream) Next() ([]byte, error) {
	for s.err == nil {
		ev, err := s.r.Next()
		if err != nil {
			switch {
			case err != io.EOF:
				s.err = provider.TransportError(s.ctx, readingStream, err)
			case !s.fin.Whole():
				s.err = provider.TransportError(s.ctx, readingStream+": stream ended before a finish reason", io.ErrUnexpectedEOF)
			default:
				s.err = io.EOF
			}
			return nil, s.err
		}
		if len(ev.Data) == 0 {
			continue
		}
		if !jsoncheck.Valid(ev.Data) {
			s.err = malformed("stream event")
			return nil, s.err
		}
		if err := s.read(ev.Data); err != nil {
			s.err = err
			return nil, err
		}
		return ev.Data, nil
	}
	return nil, s.err
}

// read reads an event's usage, model and finishes (with jsonscan, as the
// translated stream reads them: scan.go), or the failure an error event
// names.
func (s *nativeStream) read(data []byte) error {
	ev := readEvent(unsafeString(data))
	if ev.err != "" && ev.err[0] == '{' {
		e := ClassifyError(0, nil, data, s.now)
		e.Message = "gemini stream error event: " + e.Message
		e.Body = bytes.Clone(data)
		return e
	}
	if ev.usage != "" {
		s.usage = readUsage(ev.usage)
	}
	if s.model == "" {
		s.model = models.Name(jsonscan.AsString(ev.model), s.target)
	}
	if ev.candidates == "" && ev.blocked() {
		s.fin.Finish(0)
	}
	pos := 0
	for e := each(ev.candidates); e.next(); pos++ {
		c := jsonscan.Fields(e.val, "index", "finishReason")
		idx := pos
		if c[0] != "" {
			idx = int(jsonscan.AsInt(c[0]))
		}
		// A finishReason that is a string, not empty (gjson's Str).
		if jsonscan.IsString(c[1]) && len(c[1]) > 2 {
			s.fin.Finish(idx)
		} else {
			s.fin.Saw(idx)
		}
	}
	return nil
}

// Usage is the latest usageMetadata the stream carried.
func (s *nativeStream) Usage() outcome.Usage {
	u := s.usage.outcome()
	u.Model = s.model
	return u
}

// Close releases the connection; calling it again does nothing.
func (s *nativeStream) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.err == nil {
		s.err = &outcome.Error{Kind: outcome.Canceled, Message: "gemini stream closed"}
	}
	return s.body.Close()
}

// Pending reports whether a whole event is already buffered.
func (s *nativeStream) Pending() bool { return !s.closed && s.r.Pending() }
