package proxy

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/provider"
)

// bodyPool recycles request-body buffers. Buffers that grew past
// maxPooledBody are dropped so one huge request does not pin memory.
var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledBody = 1 << 20

// bodyReadTimeout bounds how long a client may take to send its body.
const bodyReadTimeout = 60 * time.Second

func putBody(b *bytes.Buffer) {
	if b.Cap() <= maxPooledBody {
		b.Reset()
		bodyPool.Put(b)
	}
}

// apiError is a client-facing error before any attempt: status plus the
// OpenAI error fields.
type apiError struct {
	status  int
	typ     string
	code    string
	param   string
	message string
}

func (e *apiError) Error() string { return e.message }

func badRequest(param, msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", code: "invalid_request_error", param: param, message: msg}
}

// readBody reads the whole body, bounded by max, into a pooled buffer the
// caller must return with putBody.
func readBody(w http.ResponseWriter, r *http.Request, max int64) (*bytes.Buffer, *apiError) {
	if ct := r.Header.Get("Content-Type"); ct != "" && ct != "application/json" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return nil, &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", code: "invalid_request_error",
				message: "unsupported content type " + quote(ct) + ": send the body as application/json"}
		}
	}
	if r.ContentLength > max {
		return nil, tooLarge(max)
	}
	buf := bodyPool.Get().(*bytes.Buffer)
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength))
	}
	// A slow client gets bodyReadTimeout to send its body; the deadline
	// is cleared afterwards because the server would otherwise cancel the
	// request's context when a read deadline passes during a long stream.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(bodyReadTimeout))
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, max))
	_ = rc.SetReadDeadline(time.Time{})
	if err != nil {
		putBody(buf)
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge(max)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, badRequest("", "the request body ended early")
		}
		return nil, badRequest("", "could not read the request body: "+err.Error())
	}
	if buf.Len() == 0 {
		putBody(buf)
		return nil, badRequest("", "the request body is empty: send a JSON object")
	}
	return buf, nil
}

func tooLarge(max int64) *apiError {
	return &apiError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error", code: "request_too_large",
		message: "the request body is larger than the limit of " + itoa(max) + " bytes"}
}

// fields is what the router reads from a request body. Everything else
// passes through untouched.
type fields struct {
	model        string
	modelStart   int
	modelEnd     int
	stream       bool
	includeUsage bool
	maxTokens    int64
}

// parseFields reads the top-level fields the router needs in one pass
// over the document (values it does not need are skipped, not decoded) and
// checks the types of those it reads. body must not change while the
// result is in use; strings in the result do not alias body.
func parseFields(op provider.Op, body []byte) (fields, *apiError) {
	var f fields
	if !gjson.ValidBytes(body) {
		return f, badRequest("", "the request body is not valid JSON")
	}
	doc := gjson.Parse(unsafe.String(unsafe.SliceData(body), len(body)))
	if !doc.IsObject() {
		return f, badRequest("", "the request body must be a JSON object")
	}
	var (
		aerr     *apiError
		hasModel bool
		required = requiredField(op)
		hasReq   bool
	)
	doc.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model":
			if v.Type != gjson.String {
				aerr = badRequest("model", "model must be a string")
				return false
			}
			hasModel = true
			f.model = strings.Clone(v.Str)
			f.modelStart, f.modelEnd = v.Index, v.Index+len(v.Raw)
		case "stream":
			switch v.Type {
			case gjson.True, gjson.False:
				f.stream = v.Type == gjson.True
			case gjson.Null:
			default:
				aerr = badRequest("stream", "stream must be a boolean")
				return false
			}
		case "stream_options":
			if v.Type == gjson.Null {
				break
			}
			if !v.IsObject() {
				aerr = badRequest("stream_options", "stream_options must be an object")
				return false
			}
			iu := v.Get("include_usage")
			switch iu.Type {
			case gjson.True, gjson.False, gjson.Null:
				f.includeUsage = iu.Type == gjson.True
			default:
				aerr = badRequest("stream_options.include_usage", "stream_options.include_usage must be a boolean")
				return false
			}
		case "max_tokens", "max_completion_tokens":
			switch v.Type {
			case gjson.Null:
			case gjson.Number:
				if v.Num < 0 || v.Num != float64(int64(v.Num)) {
					aerr = badRequest(k.Str, k.Str+" must be a non-negative integer")
					return false
				}
				if n := int64(v.Num); n > f.maxTokens {
					f.maxTokens = n
				}
			default:
				aerr = badRequest(k.Str, k.Str+" must be an integer")
				return false
			}
		case required:
			hasReq = true
			if aerr = checkRequired(op, v); aerr != nil {
				return false
			}
		}
		return true
	})
	if aerr != nil {
		return f, aerr
	}
	if !hasModel || f.model == "" {
		return f, badRequest("model", "you must provide a model parameter")
	}
	if !hasReq {
		return f, badRequest(required, "missing required parameter: "+quote(required))
	}
	if f.stream && op == provider.OpEmbeddings {
		return f, badRequest("stream", "embeddings cannot be streamed")
	}
	return f, nil
}

func requiredField(op provider.Op) string {
	switch op {
	case provider.OpCompletions:
		return "prompt"
	case provider.OpEmbeddings:
		return "input"
	}
	return "messages"
}

func checkRequired(op provider.Op, v gjson.Result) *apiError {
	switch op {
	case provider.OpChat:
		if !v.IsArray() {
			return badRequest("messages", "messages must be an array of message objects")
		}
		n := 0
		var bad *apiError
		v.ForEach(func(_, m gjson.Result) bool {
			n++
			if !m.IsObject() {
				bad = badRequest("messages", "every entry of messages must be an object")
				return false
			}
			if r := m.Get("role"); r.Type != gjson.String {
				bad = badRequest("messages", "every message needs a string role")
				return false
			}
			return true
		})
		if bad != nil {
			return bad
		}
		if n == 0 {
			return badRequest("messages", "messages must not be empty")
		}
	case provider.OpCompletions:
		if v.Type != gjson.String && !v.IsArray() {
			return badRequest("prompt", "prompt must be a string or an array")
		}
	case provider.OpEmbeddings:
		switch {
		case v.Type == gjson.String:
		case v.IsArray():
			if len(v.Array()) == 0 {
				return badRequest("input", "input must not be empty")
			}
		default:
			return badRequest("input", "input must be a string or an array")
		}
	}
	return nil
}

func quote(s string) string {
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return string(provider.AppendJSONString(nil, s))
}
