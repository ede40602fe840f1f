package anthropic

import (
	"encoding/json"
	"errors"
	"net/http"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// finishReason maps Anthropic's stop_reason to OpenAI's finish_reason.
// Unknown and null reasons are "stop": the message ended normally as far
// as the client can tell.
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

// outcome is the usage the router counts: the whole prompt, with its
// cache reads and writes also reported apart (they are priced apart).
func (u usage) outcome() outcome.Usage {
	return outcome.Usage{PromptTokens: u.prompt(), CompletionTokens: u.output,
		CachedInput: u.cacheRead, CacheWrite: u.cacheCreation}
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

// wire is the OpenAI usage object. Anthropic always reports its cache
// reads, so prompt_tokens_details is always sent.
func (u usage) wire() *openaiwire.Usage {
	return &openaiwire.Usage{
		PromptTokens:        u.prompt(),
		CompletionTokens:    u.output,
		TotalTokens:         u.prompt() + u.output,
		PromptTokensDetails: &openaiwire.PromptTokensDetails{CachedTokens: u.cacheRead},
	}
}

// nullLogprobs is every choice's logprobs: the null OpenAI sends when they
// were not asked for (the Messages API has none).
var nullLogprobs = json.RawMessage("null")

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

// models keeps the model names Anthropic's messages report (and those of
// the clouds that sell Claude, which answer the same messages).
var models provider.ModelNames

// convertMessage appends the OpenAI chat.completion for the Anthropic
// message raw to dst, and returns its usage and the model that answered
// (target is the one asked for).
func convertMessage(dst, raw []byte, target string, created int64) ([]byte, outcome.Usage, error) {
	if !jsoncheck.Valid(raw) {
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

	// Text blocks join into one string; thinking blocks are not relayed.
	var text []byte
	var first string
	nText := 0
	var calls []openaiwire.ToolCall
	blocks.ForEach(func(_, b gjson.Result) bool {
		switch b.Get("type").Str {
		case "text":
			t := b.Get("text")
			if t.Type != gjson.String {
				return true
			}
			switch nText {
			case 0:
				first = t.Str
			case 1:
				text = append(append(text, first...), t.Str...)
			default:
				text = append(text, t.Str...)
			}
			nText++
		case "tool_use":
			args := b.Get("input").Raw
			if args == "" {
				args = "{}"
			}
			calls = append(calls, openaiwire.ToolCall{ID: b.Get("id").Str, Type: "function",
				Function: openaiwire.FunctionCall{Name: b.Get("name").Str, Arguments: args}})
		}
		return true
	})
	msg := openaiwire.ResponseMessage{Role: "assistant", ToolCalls: calls}
	switch nText {
	case 0: // null content
	case 1:
		msg.Content = &first
	default:
		joined := string(text)
		msg.Content = &joined
	}

	var u usage
	u.read(doc.Get("usage"))
	model := doc.Get("model").Str
	// Id and model are Anthropic's; "" when they are not strings.
	out, err := openaiwire.Append(dst, &openaiwire.ChatCompletion{
		ID:      doc.Get("id").Str,
		Object:  openaiwire.ObjectChatCompletion,
		Created: created,
		Model:   model,
		Choices: []openaiwire.ChatChoice{{
			Message:      msg,
			Logprobs:     nullLogprobs,
			FinishReason: finishReason(doc.Get("stop_reason").Str),
		}},
		Usage: u.wire(),
	})
	if err != nil {
		// Only strings and numbers are encoded: this does not happen.
		return nil, outcome.Usage{}, invalidAnswer("encoding the chat completion: " + err.Error())
	}
	ou := u.outcome()
	ou.Model = models.Name(model, target)
	return out, ou, nil
}
