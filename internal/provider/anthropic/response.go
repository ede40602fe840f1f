package anthropic

import (
	"errors"
	"net/http"
	"strconv"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// finishReason maps Anthropic's stop_reason to OpenAI's finish_reason
// (PROVIDERS.md §3.5). Unknown and null reasons are "stop": the message
// ended normally as far as the client can tell.
func finishReason(stop string) string {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	return "stop"
}

// usage is Anthropic's token count split as it reports it.
type usage struct {
	input, cacheCreation, cacheRead, output int64
}

// prompt is the whole input: Anthropic counts cached and cache-writing
// tokens apart from input_tokens.
func (u usage) prompt() int64 { return u.input + u.cacheCreation + u.cacheRead }

func (u usage) outcome() outcome.Usage {
	return outcome.Usage{PromptTokens: u.prompt(), CompletionTokens: u.output}
}

// read sets the fields present in an Anthropic usage object; absent and
// null ones keep their value (message_delta's input fields are nullable).
func (u *usage) read(r gjson.Result) {
	for _, f := range [...]struct {
		key string
		dst *int64
	}{
		{"input_tokens", &u.input},
		{"cache_creation_input_tokens", &u.cacheCreation},
		{"cache_read_input_tokens", &u.cacheRead},
		{"output_tokens", &u.output},
	} {
		if v := r.Get(f.key); v.Type == gjson.Number {
			*f.dst = v.Int()
		}
	}
}

// appendUsage writes an OpenAI usage object.
func appendUsage(dst []byte, u usage) []byte {
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, u.prompt(), 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, u.output, 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, u.prompt()+u.output, 10)
	dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
	dst = strconv.AppendInt(dst, u.cacheRead, 10)
	return append(dst, "}}"...)
}

// appendRawString appends r's JSON literal when r is a string, else "".
// The document r came from was validated, so the literal is valid JSON.
func appendRawString(dst []byte, r gjson.Result) []byte {
	if r.Type != gjson.String {
		return append(dst, `""`...)
	}
	return append(dst, r.Raw...)
}

// unsafeString views b as a string without copying. b must not change while
// the string or anything sliced from it is in use.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// errInvalidAnswer marks a 200 answer the adapter could not read.
var errInvalidAnswer = errors.New("invalid anthropic answer")

// invalidAnswer is the error for a 200 whose body is not a message.
func invalidAnswer(what string) *outcome.Error {
	return &outcome.Error{Kind: outcome.ServerError, Status: http.StatusOK,
		Message: "reading anthropic message: " + what, Err: errInvalidAnswer}
}

// convertMessage appends the OpenAI chat.completion for the Anthropic
// message raw to dst.
func convertMessage(dst, raw []byte, created int64) ([]byte, outcome.Usage, error) {
	if !gjson.ValidBytes(raw) {
		return nil, outcome.Usage{}, invalidAnswer("invalid JSON")
	}
	// raw is not modified while doc is in use.
	doc := gjson.Parse(unsafeString(raw))
	if doc.Get("type").Str == "error" {
		e := eventError(doc.Get("error"))
		e.Message = "reading anthropic message: " + e.Message
		return nil, outcome.Usage{}, e
	}
	blocks := doc.Get("content")
	if !blocks.IsArray() {
		return nil, outcome.Usage{}, invalidAnswer("no content array")
	}

	dst = append(dst, `{"id":`...)
	dst = appendRawString(dst, doc.Get("id"))
	dst = append(dst, `,"object":"chat.completion","created":`...)
	dst = strconv.AppendInt(dst, created, 10)
	dst = append(dst, `,"model":`...)
	dst = appendRawString(dst, doc.Get("model"))
	dst = append(dst, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)

	// Text blocks join into one string; one block (the usual case) is
	// copied as the literal Anthropic sent.
	var first gjson.Result
	var joined []byte
	nText, nTools := 0, 0
	blocks.ForEach(func(_, b gjson.Result) bool {
		switch b.Get("type").Str {
		case "text":
			t := b.Get("text")
			if t.Type != gjson.String {
				return true
			}
			if nText == 1 {
				joined = append(joined, first.Str...)
			}
			if nText == 0 {
				first = t
			} else {
				joined = append(joined, t.Str...)
			}
			nText++
		case "tool_use":
			nTools++
		}
		return true
	})
	switch nText {
	case 0:
		dst = append(dst, "null"...)
	case 1:
		dst = append(dst, first.Raw...)
	default:
		dst = provider.AppendJSONString(dst, string(joined))
	}

	if nTools > 0 {
		dst = append(dst, `,"tool_calls":[`...)
		k := 0
		blocks.ForEach(func(_, b gjson.Result) bool {
			if b.Get("type").Str != "tool_use" {
				return true
			}
			if k > 0 {
				dst = append(dst, ',')
			}
			k++
			dst = append(dst, `{"id":`...)
			dst = appendRawString(dst, b.Get("id"))
			dst = append(dst, `,"type":"function","function":{"name":`...)
			dst = appendRawString(dst, b.Get("name"))
			dst = append(dst, `,"arguments":`...)
			args := b.Get("input").Raw
			if args == "" {
				args = "{}"
			}
			dst = provider.AppendJSONString(dst, args)
			dst = append(dst, "}}"...)
			return true
		})
		dst = append(dst, ']')
	}

	var u usage
	u.read(doc.Get("usage"))
	dst = append(dst, `},"logprobs":null,"finish_reason":"`...)
	dst = append(dst, finishReason(doc.Get("stop_reason").Str)...)
	dst = append(dst, `"}],"usage":`...)
	dst = appendUsage(dst, u)
	return append(dst, '}'), u.outcome(), nil
}
