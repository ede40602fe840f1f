package gemini

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
	"github.com/llmrouter/llmrouter/internal/jsonscan"
	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// Gemini answers are read rather than decoded into structs: the adapter
// reads the handful of fields an event has for OpenAI straight into the
// openaiwire answer types, with jsonscan (scan.go). A whole answer's
// top level is read with gjson.

// usage is Gemini's usageMetadata as far as OpenAI can show it.
type usage struct {
	prompt, candidates, thoughts, cached int64
}

// readUsage reads the usageMetadata object u (its JSON text).
func readUsage(u string) usage {
	f := jsonscan.Fields(u, "promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount", "cachedContentTokenCount")
	return usage{
		prompt:     jsonscan.AsInt(f[0]),
		candidates: jsonscan.AsInt(f[1]),
		thoughts:   jsonscan.AsInt(f[2]),
		cached:     jsonscan.AsInt(f[3]),
	}
}

// outcome counts thinking as completion: the provider bills it as output;
// cached content is the part of the prompt billed at the cache's price.
func (u usage) outcome() outcome.Usage {
	return outcome.Usage{PromptTokens: u.prompt, CompletionTokens: u.candidates + u.thoughts, CachedInput: u.cached}
}

// wire is the OpenAI usage object; the details objects are sent only when
// Gemini counted cached or thinking tokens.
func (u usage) wire() *openaiwire.Usage {
	ou := u.outcome()
	w := &openaiwire.Usage{PromptTokens: ou.PromptTokens, CompletionTokens: ou.CompletionTokens, TotalTokens: ou.Total()}
	if u.cached > 0 {
		w.PromptTokensDetails = &openaiwire.PromptTokensDetails{CachedTokens: u.cached}
	}
	if u.thoughts > 0 {
		w.CompletionTokensDetails = &openaiwire.CompletionTokensDetails{ReasoningTokens: u.thoughts}
	}
	return w
}

// finishReason maps a Gemini finishReason to OpenAI's; "" stays "" (not
// finished). toolCalls says the candidate emitted function calls, which
// OpenAI reports as finish_reason tool_calls.
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

// responseID is the OpenAI id for Gemini's responseId: "chatcmpl-" and
// the responseId, or 32 random hex digits when Gemini sent none.
func responseID(respID string) string {
	if respID != "" {
		return "chatcmpl-" + respID
	}
	b := make([]byte, 0, len("chatcmpl-")+32)
	b = append(b, "chatcmpl-"...)
	return string(appendRandomHex(appendRandomHex(b)))
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

// toolCall is the OpenAI tool call for a Gemini functionCall (its JSON
// text). The id is Gemini's own when it sent one, else generated; the
// arguments are args compacted, {} when args is not an object.
func toolCall(fc string) openaiwire.ToolCall {
	f := jsonscan.Fields(fc, "id", "args", "name")
	id := jsonscan.AsString(f[0])
	if id == "" {
		id = string(appendRandomHex([]byte("call_")))
	}
	args := "{}"
	if a := f[1]; a != "" && a[0] == '{' {
		args = compactJSON(a)
	}
	return openaiwire.ToolCall{ID: id, Type: "function", Function: openaiwire.FunctionCall{Name: jsonscan.AsString(f[2]), Arguments: args}}
}

// textOf joins the text of the parts (a JSON array's text) that are
// neither thoughts nor function calls. ok is false when there is none;
// with skipEmpty an empty or non-string text counts as none. One part's
// text is returned without copying.
func textOf(parts string, skipEmpty bool) (text string, ok bool) {
	var joined []byte
	n := 0
	for e := each(parts); e.next(); {
		f := jsonscan.Fields(e.val, "thought", "functionCall", "text")
		if jsonscan.AsBool(f[0]) || f[1] != "" {
			continue
		}
		t := f[2]
		if t == "" || skipEmpty && (!jsonscan.IsString(t) || t == `""`) {
			continue
		}
		switch n {
		case 0:
			text = jsonscan.AsString(t)
		case 1:
			joined = append(append(joined, text...), jsonscan.AsString(t)...)
		default:
			joined = append(joined, jsonscan.AsString(t)...)
		}
		n++
	}
	if n > 1 {
		text = string(joined)
	}
	return text, n > 0
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
func candidateIndex(c string, pos int) int {
	if v := get(c, "index"); v != "" {
		return int(jsonscan.AsInt(v))
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

// models keeps the model versions Gemini's answers report (and Vertex's,
// which answer the same documents).
var models provider.ModelNames

// translateCompletion turns a GenerateContentResponse into an OpenAI
// chat.completion document, and returns its usage and the model version
// that answered (model is the one asked for).
// now stamps "created" and dates an error body's quota reset.
func translateCompletion(data []byte, model string, now time.Time) ([]byte, outcome.Usage, error) {
	if !jsoncheck.Valid(data) {
		return nil, outcome.Usage{}, malformed("generateContent answer")
	}
	res := gjson.ParseBytes(data)
	if e := res.Get("error"); e.IsObject() {
		return nil, outcome.Usage{}, ClassifyError(0, nil, data, now)
	}
	u := readUsage(res.Get("usageMetadata").Raw)
	respID := res.Get("responseId").String()
	ou := u.outcome()
	if ou.Model = models.Name(res.Get("modelVersion").String(), model); ou.Model != "" {
		model = ou.Model
	}

	doc := openaiwire.ChatCompletion{
		ID:      responseID(respID),
		Object:  openaiwire.ObjectChatCompletion,
		Created: now.Unix(),
		Model:   model,
		Usage:   u.wire(),
	}
	cands := res.Get("candidates").Array()
	if len(cands) == 0 {
		// No candidates: the prompt itself was blocked (promptFeedback
		// .blockReason) or nothing came back. Both are an empty answer;
		// a block says so with content_filter.
		reason := openaiwire.FinishStop
		if res.Get("promptFeedback.blockReason").String() != "" {
			reason = openaiwire.FinishContentFilter
		}
		empty := ""
		doc.Choices = []openaiwire.ChatChoice{{Message: openaiwire.ResponseMessage{Role: "assistant", Content: &empty}, FinishReason: reason}}
	}
	doc.Choices = slices.Grow(doc.Choices, len(cands))
	for pos, c := range cands {
		parts := c.Get("content.parts")
		var calls []openaiwire.ToolCall
		parts.ForEach(func(_, p gjson.Result) bool {
			if fc := p.Get("functionCall"); fc.Exists() && !p.Get("thought").Bool() {
				calls = append(calls, toolCall(fc.Raw))
			}
			return true
		})
		msg := openaiwire.ResponseMessage{Role: "assistant", ToolCalls: calls}
		text, hasText := textOf(parts.Raw, false)
		if hasText || len(calls) == 0 {
			msg.Content = &text // "" when there is neither text nor a call
		}
		fr := finishReason(c.Get("finishReason").String(), len(calls) > 0)
		if fr == "" {
			fr = openaiwire.FinishStop
		}
		doc.Choices = append(doc.Choices, openaiwire.ChatChoice{Index: candidateIndex(c.Raw, pos), Message: msg, FinishReason: fr})
	}
	out, err := openaiwire.Append(make([]byte, 0, len(data)+256), &doc)
	if err != nil {
		// Only strings and numbers are encoded: this does not happen.
		return nil, outcome.Usage{}, malformed("generateContent answer: " + err.Error())
	}
	return out, ou, nil
}
