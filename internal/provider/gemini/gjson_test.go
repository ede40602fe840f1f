package gemini

import (
	"slices"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/jsoncheck"
	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/outcome"
)

// The event reads as they were written with gjson, before the stream
// read its events with jsonscan: the reference FuzzReadsAsGjson holds
// the reads to.

func gjsonUsage(u gjson.Result) usage {
	return usage{
		prompt:     u.Get("promptTokenCount").Int(),
		candidates: u.Get("candidatesTokenCount").Int(),
		thoughts:   u.Get("thoughtsTokenCount").Int(),
		cached:     u.Get("cachedContentTokenCount").Int(),
	}
}

func gjsonToolCall(fc gjson.Result) openaiwire.ToolCall {
	id := fc.Get("id").String()
	if id == "" {
		id = string(appendRandomHex([]byte("call_")))
	}
	args := "{}"
	if a := fc.Get("args"); a.IsObject() {
		args = compactJSON(a.Raw)
	}
	return openaiwire.ToolCall{ID: id, Type: "function", Function: openaiwire.FunctionCall{Name: fc.Get("name").String(), Arguments: args}}
}

func gjsonTextOf(parts gjson.Result, skipEmpty bool) (text string, ok bool) {
	var joined []byte
	n := 0
	parts.ForEach(func(_, p gjson.Result) bool {
		if p.Get("thought").Bool() || p.Get("functionCall").Exists() {
			return true
		}
		t := p.Get("text")
		if !t.Exists() || skipEmpty && (t.Type != gjson.String || t.Str == "") {
			return true
		}
		switch n {
		case 0:
			text = t.String()
		case 1:
			joined = append(append(joined, text...), t.String()...)
		default:
			joined = append(joined, t.String()...)
		}
		n++
		return true
	})
	if n > 1 {
		text = string(joined)
	}
	return text, n > 0
}

func gjsonCandidateIndex(c gjson.Result, pos int) int {
	if v := c.Get("index"); v.Exists() {
		return int(v.Int())
	}
	return pos
}

// gjsonChunkOf is stream.chunkOf as it was.
func gjsonChunkOf(s *stream, data []byte) (bool, error) {
	if !jsoncheck.Valid(data) {
		return false, malformed("stream event")
	}
	res := gjson.ParseBytes(data)
	if res.Get("error").IsObject() {
		e := ClassifyError(0, nil, data, s.now)
		e.Message = "gemini stream error event: " + e.Message
		return false, e
	}
	if u := res.Get("usageMetadata"); u.Exists() {
		s.usage = gjsonUsage(u)
	}
	if !s.head {
		s.head = true
		s.chunk.ID = responseID(res.Get("responseId").String())
		if s.model = models.Name(res.Get("modelVersion").String(), s.chunk.Model); s.model != "" {
			s.chunk.Model = s.model
		}
	}
	s.chunk.Choices = s.chunk.Choices[:0]
	s.texts = s.texts[:0]
	var err error
	cands := res.Get("candidates")
	if !cands.Exists() && res.Get("promptFeedback.blockReason").Exists() {
		s.fin.Finish(0)
		s.grow(0)
		gjsonAddChoice(s, 0, "", gjson.Result{}, openaiwire.FinishContentFilter)
	}
	pos := 0
	cands.ForEach(func(_, c gjson.Result) bool {
		idx := gjsonCandidateIndex(c, pos)
		pos++
		if idx < 0 || idx >= maxChoices {
			err = malformed("stream event: candidate index " + strconv.Itoa(idx))
			return false
		}
		s.grow(idx)
		gjsonAddChoice(s, idx, c.Get("finishReason").String(), c.Get("content.parts"), "")
		return true
	})
	if err != nil {
		return false, err
	}
	return len(s.chunk.Choices) > 0, nil
}

func gjsonAddChoice(s *stream, idx int, reason string, parts gjson.Result, forced string) {
	var d openaiwire.Delta
	if !s.roleSent[idx] {
		d.Role = "assistant"
	}
	text, hasText := gjsonTextOf(parts, true)
	parts.ForEach(func(_, p gjson.Result) bool {
		fc := p.Get("functionCall")
		if !fc.Exists() || p.Get("thought").Bool() {
			return true
		}
		tc := gjsonToolCall(fc)
		d.ToolCalls = append(d.ToolCalls, openaiwire.ToolCallDelta{Index: s.toolCalls[idx], ID: tc.ID, Type: tc.Type,
			Function: openaiwire.FunctionDelta{Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
		s.toolCalls[idx]++
		return true
	})
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
		return
	}
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

// gjsonNativeRead is nativeStream.Next's read of an event (valid JSON,
// not an error document) as it was: its usage, model and finishes.
func gjsonNativeRead(s *nativeStream, data []byte) {
	res := gjson.ParseBytes(data)
	if u := res.Get("usageMetadata"); u.Exists() {
		s.usage = gjsonUsage(u)
	}
	if s.model == "" {
		s.model = models.Name(res.Get("modelVersion").String(), s.target)
	}
	cands := res.Get("candidates")
	if !cands.Exists() && res.Get("promptFeedback.blockReason").Exists() {
		s.fin.Finish(0)
	}
	pos := 0
	cands.ForEach(func(_, c gjson.Result) bool {
		if idx := gjsonCandidateIndex(c, pos); c.Get("finishReason").Str != "" {
			s.fin.Finish(idx)
		} else {
			s.fin.Saw(idx)
		}
		pos++
		return true
	})
}

// gjsonTranslateCompletion is translateCompletion as it was.
func gjsonTranslateCompletion(data []byte, model string, now time.Time) ([]byte, outcome.Usage, error) {
	if !jsoncheck.Valid(data) {
		return nil, outcome.Usage{}, malformed("generateContent answer")
	}
	res := gjson.ParseBytes(data)
	if e := res.Get("error"); e.IsObject() {
		return nil, outcome.Usage{}, ClassifyError(0, nil, data, now)
	}
	u := gjsonUsage(res.Get("usageMetadata"))
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
				calls = append(calls, gjsonToolCall(fc))
			}
			return true
		})
		msg := openaiwire.ResponseMessage{Role: "assistant", ToolCalls: calls}
		text, hasText := gjsonTextOf(parts, false)
		if hasText || len(calls) == 0 {
			msg.Content = &text // "" when there is neither text nor a call
		}
		fr := finishReason(c.Get("finishReason").String(), len(calls) > 0)
		if fr == "" {
			fr = openaiwire.FinishStop
		}
		doc.Choices = append(doc.Choices, openaiwire.ChatChoice{Index: gjsonCandidateIndex(c, pos), Message: msg, FinishReason: fr})
	}
	out, err := openaiwire.Append(make([]byte, 0, len(data)+256), &doc)
	if err != nil {
		// Only strings and numbers are encoded: this does not happen.
		return nil, outcome.Usage{}, malformed("generateContent answer: " + err.Error())
	}
	return out, ou, nil
}

// gjsonNativeError is nativeStream.read's test for an error event as it
// was.
func gjsonNativeError(data []byte) bool { return gjson.ParseBytes(data).Get("error").IsObject() }
