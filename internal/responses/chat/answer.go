package chat

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/responses/wire"
)

// chatAnswer is a chat completion as far as a Response needs it.
type chatAnswer struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content   *string               `json:"content"`
			Refusal   *string               `json:"refusal"`
			ToolCalls []openaiwire.ToolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *openaiwire.Usage `json:"usage"`
}

// errNoChoice is Answer's error for a chat completion without a choice.
var errNoChoice = errors.New("the chat completion has no choice")

// Answer turns a provider's chat completion into the Response JSON (one
// line and a newline) and stores it unless the client sent store: false.
// The error says why the chat completion could not be read.
func (tr *Translation) Answer(chat []byte) ([]byte, error) {
	var a chatAnswer
	if err := json.Unmarshal(chat, &a); err != nil {
		return nil, fmt.Errorf("reading the chat completion: %w", err)
	}
	if len(a.Choices) == 0 {
		return nil, errNoChoice
	}
	c := &a.Choices[0]
	status, details := finishStatus(c.FinishReason)
	var out []wire.Item
	msg := wire.Item{Type: wire.TypeMessage, Role: "assistant"}
	if s := c.Message.Content; s != nil && *s != "" {
		msg.Parts = append(msg.Parts, wire.Part{Type: wire.PartOutputText, Text: *s})
	}
	if s := c.Message.Refusal; s != nil && *s != "" {
		msg.Parts = append(msg.Parts, wire.Part{Type: wire.PartRefusal, Text: *s})
	}
	if msg.Parts != nil || len(c.Message.ToolCalls) == 0 {
		if msg.Parts == nil {
			msg.Parts = []wire.Part{{Type: wire.PartOutputText}} // an empty answer is still a message
		}
		msg.ID = wire.NewID("msg_")
		out = append(out, msg)
	}
	for _, tc := range c.Message.ToolCalls {
		out = append(out, tr.names.call(tc.ID, tc.Function.Name, tc.Function.Arguments))
	}
	itemStatus := wire.StatusCompleted
	if status == wire.StatusIncomplete {
		itemStatus = wire.StatusIncomplete
	}
	items := make([]wire.OutputItem, len(out))
	for i := range out {
		items[i] = wire.OutputItem{Item: out[i], Status: itemStatus}
	}
	r := tr.t.Response(status, a.Model, items, usage(a.Usage))
	r.IncompleteDetails = details
	return tr.t.Keep(out, r), nil
}

// finishStatus maps a chat finish reason to a response status: length
// and content_filter leave it incomplete, everything else completed.
func finishStatus(reason string) (string, *wire.IncompleteDetails) {
	switch reason {
	case openaiwire.FinishLength:
		return wire.StatusIncomplete, &wire.IncompleteDetails{Reason: "max_output_tokens"}
	case openaiwire.FinishContentFilter:
		return wire.StatusIncomplete, &wire.IncompleteDetails{Reason: "content_filter"}
	}
	return wire.StatusCompleted, nil
}

// usage is the Responses usage for a chat usage.
func usage(u *openaiwire.Usage) *wire.Usage {
	if u == nil {
		return nil
	}
	out := &wire.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.InputTokens + out.OutputTokens
	}
	if d := u.PromptTokensDetails; d != nil {
		out.InputTokensDetails.CachedTokens = d.CachedTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		out.OutputTokensDetails.ReasoningTokens = d.ReasoningTokens
	}
	return out
}
