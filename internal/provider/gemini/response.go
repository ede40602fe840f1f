package gemini

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// Gemini answers are read with gjson rather than decoded into structs: the
// adapter reads a handful of fields per event and writes the OpenAI bytes
// directly, so nothing but the output buffer is allocated per part.

// usage is Gemini's usageMetadata as far as OpenAI can show it.
type usage struct {
	prompt, candidates, thoughts, cached int64
}

func readUsage(u gjson.Result) usage {
	return usage{
		prompt:     u.Get("promptTokenCount").Int(),
		candidates: u.Get("candidatesTokenCount").Int(),
		thoughts:   u.Get("thoughtsTokenCount").Int(),
		cached:     u.Get("cachedContentTokenCount").Int(),
	}
}

// outcome counts thinking as completion: the provider bills it as output.
func (u usage) outcome() outcome.Usage {
	return outcome.Usage{PromptTokens: u.prompt, CompletionTokens: u.candidates + u.thoughts}
}

func appendUsage(dst []byte, u usage) []byte {
	ou := u.outcome()
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, ou.PromptTokens, 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, ou.CompletionTokens, 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, ou.Total(), 10)
	if u.cached > 0 {
		dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
		dst = strconv.AppendInt(dst, u.cached, 10)
		dst = append(dst, '}')
	}
	if u.thoughts > 0 {
		dst = append(dst, `,"completion_tokens_details":{"reasoning_tokens":`...)
		dst = strconv.AppendInt(dst, u.thoughts, 10)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// finishReason maps a Gemini finishReason to OpenAI's (PROVIDERS.md §3.5);
// "" stays "" (not finished). toolCalls says the candidate emitted
// function calls, which OpenAI reports as finish_reason tool_calls.
func finishReason(r string, toolCalls bool) string {
	switch r {
	case "":
		return ""
	case "STOP":
		if toolCalls {
			return "tool_calls"
		}
	case "MAX_TOKENS":
		return "length"
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY":
		return "content_filter"
	}
	return "stop"
}

// appendEscaped appends s as the inside of a JSON string (no quotes), so
// that several parts can form one string without joining them first.
func appendEscaped(dst []byte, s string) []byte {
	n := len(dst)
	dst = provider.AppendJSONString(dst, s)
	copy(dst[n:], dst[n+1:len(dst)-1])
	return dst[:len(dst)-2]
}

// appendRandomHex appends 16 random hex digits. Ids need to be unique, not
// secret, so math/rand/v2 is enough.
func appendRandomHex(dst []byte) []byte {
	v := rand.Uint64()
	for i := 60; i >= 0; i -= 4 {
		dst = append(dst, "0123456789abcdef"[(v>>uint(i))&0xf])
	}
	return dst
}

// appendToolCall appends one OpenAI tool call for a Gemini functionCall.
// index < 0 leaves the index out (a message's tool_calls have none). The
// id is Gemini's own when it sent one, else generated.
func appendToolCall(dst []byte, index int, fc gjson.Result) []byte {
	dst = append(dst, '{')
	if index >= 0 {
		dst = append(dst, `"index":`...)
		dst = strconv.AppendInt(dst, int64(index), 10)
		dst = append(dst, ',')
	}
	dst = append(dst, `"id":`...)
	if id := fc.Get("id").String(); id != "" {
		dst = provider.AppendJSONString(dst, id)
	} else {
		dst = append(dst, `"call_`...)
		dst = appendRandomHex(dst)
		dst = append(dst, '"')
	}
	dst = append(dst, `,"type":"function","function":{"name":`...)
	dst = provider.AppendJSONString(dst, fc.Get("name").String())
	dst = append(dst, `,"arguments":`...)
	if args := fc.Get("args"); args.IsObject() {
		dst = provider.AppendJSONString(dst, compactJSON(args.Raw))
	} else {
		dst = append(dst, `"{}"`...)
	}
	return append(dst, `}}`...)
}

// compactJSON removes insignificant whitespace from valid JSON. Gemini's
// non-stream answers are pretty-printed; OpenAI's arguments are compact.
func compactJSON(raw string) string {
	if !strings.ContainsAny(raw, " \t\r\n") {
		return raw
	}
	var b bytes.Buffer
	b.Grow(len(raw))
	if json.Compact(&b, []byte(raw)) != nil {
		return raw
	}
	return b.String()
}

// candidateIndex is the candidate's choice index: its "index" field, which
// proto3 JSON omits when 0, or its position when absent.
func candidateIndex(c gjson.Result, pos int) int {
	if v := c.Get("index"); v.Exists() {
		return int(v.Int())
	}
	return pos
}

// maxChoices bounds candidate indexes (Gemini allows candidateCount up to
// 8), so a broken answer cannot make the stream grow its per-choice state.
const maxChoices = 64

// malformed is the error for an answer that is not what Gemini sends.
func malformed(what string) *outcome.Error {
	return &outcome.Error{Kind: outcome.ServerError, Status: http.StatusOK, Message: "gemini: malformed " + what}
}

// translateCompletion turns a GenerateContentResponse into an OpenAI
// chat.completion document.
// now stamps "created" and dates an error body's quota reset.
func translateCompletion(data []byte, model string, now time.Time) ([]byte, usage, string, error) {
	if !gjson.ValidBytes(data) {
		return nil, usage{}, "", malformed("generateContent answer")
	}
	res := gjson.ParseBytes(data)
	if e := res.Get("error"); e.IsObject() {
		return nil, usage{}, "", ClassifyError(0, nil, data, now)
	}
	u := readUsage(res.Get("usageMetadata"))
	respID := res.Get("responseId").String()
	if v := res.Get("modelVersion").String(); v != "" {
		model = v
	}

	out := make([]byte, 0, len(data)+256)
	out = append(out, `{"id":"chatcmpl-`...)
	if respID != "" {
		out = appendEscaped(out, respID)
	} else {
		out = appendRandomHex(appendRandomHex(out))
	}
	out = append(out, `","object":"chat.completion","created":`...)
	out = strconv.AppendInt(out, now.Unix(), 10)
	out = append(out, `,"model":`...)
	out = provider.AppendJSONString(out, model)
	out = append(out, `,"choices":[`...)

	cands := res.Get("candidates").Array()
	if len(cands) == 0 {
		// No candidates: the prompt itself was blocked (promptFeedback
		// .blockReason) or nothing came back. Both are an empty answer;
		// a block says so with content_filter.
		reason := "stop"
		if res.Get("promptFeedback.blockReason").String() != "" {
			reason = "content_filter"
		}
		out = append(out, `{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"`...)
		out = append(out, reason...)
		out = append(out, `"}`...)
	}
	for pos, c := range cands {
		if pos > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"index":`...)
		out = strconv.AppendInt(out, int64(candidateIndex(c, pos)), 10)
		out = append(out, `,"message":{"role":"assistant","content":`...)
		parts := c.Get("content.parts").Array()
		hasText, calls := false, 0
		for _, p := range parts {
			if p.Get("thought").Bool() {
				continue
			}
			if p.Get("functionCall").Exists() {
				calls++
				continue
			}
			if t := p.Get("text"); t.Exists() {
				if !hasText {
					out = append(out, '"')
					hasText = true
				}
				out = appendEscaped(out, t.String())
			}
		}
		switch {
		case hasText:
			out = append(out, '"')
		case calls > 0:
			out = append(out, "null"...)
		default:
			out = append(out, `""`...)
		}
		if calls > 0 {
			out = append(out, `,"tool_calls":[`...)
			n := 0
			for _, p := range parts {
				if fc := p.Get("functionCall"); fc.Exists() && !p.Get("thought").Bool() {
					if n > 0 {
						out = append(out, ',')
					}
					out = appendToolCall(out, -1, fc)
					n++
				}
			}
			out = append(out, ']')
		}
		out = append(out, `},"finish_reason":"`...)
		fr := finishReason(c.Get("finishReason").String(), calls > 0)
		if fr == "" {
			fr = "stop"
		}
		out = append(out, fr...)
		out = append(out, `"}`...)
	}
	out = append(out, `],"usage":`...)
	out = appendUsage(out, u)
	out = append(out, '}')
	return out, u, respID, nil
}
