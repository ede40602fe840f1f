package responses

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
)

// Turn is one Responses request on its way through the router: the chat
// completions request to send, and what turns the provider's chat answer
// back into a Response and stores it.
type Turn struct {
	d         *Decoded
	id        string
	createdAt int64
	parent    *Entry // previous_response_id's entry; nil for a first turn
	input     []Item // this turn's input, item_references resolved
	store     *Store
	now       func() time.Time

	// Chat is the chat completions request body, its "model" the client's
	// model name, between ModelStart and ModelEnd (the JSON string, quotes
	// included) for the adapters to swap.
	Chat                 []byte
	ModelStart, ModelEnd int
}

// NewTurn resolves d's previous_response_id and item_references from s and
// builds the chat request over the whole conversation. now is the clock
// (nil means time.Now): the store's expiry and created_at read it.
func NewTurn(d *Decoded, s *Store, now func() time.Time) (*Turn, *Error) {
	if now == nil {
		now = time.Now
	}
	at := now()
	t := &Turn{d: d, id: newID("resp_"), createdAt: at.Unix(), store: s, now: now}
	if p := d.PreviousResponseID; p != nil && *p != "" {
		if t.parent = s.get(at, *p); t.parent == nil {
			return nil, &Error{Status: 400, Code: "previous_response_not_found", Param: "previous_response_id",
				Message: fmt.Sprintf("Previous response with id '%s' not found.", cut(*p))}
		}
	}
	t.input = make([]Item, 0, len(d.input))
	for i, it := range d.input {
		if it.Type != typeItemReference {
			t.input = append(t.input, it)
			continue
		}
		ref, ok := s.item(at, it.ID)
		if !ok {
			return nil, badRequest("input", "Item with id '%s' not found (input[%d]). Items are not persisted when `store` is set to false, "+
				"and the router keeps them for responses.ttl.", cut(it.ID), i)
		}
		t.input = append(t.input, ref)
	}
	items := t.input
	if t.parent != nil {
		items = append(t.parent.context(), t.input...)
	}
	var e *Error
	if t.Chat, e = d.chatBody(items); e != nil {
		return nil, e
	}
	// The model is the first key (chatRequest): {"model":"…",
	m, _ := openaiwire.Append(nil, &d.Model)
	t.ModelStart, t.ModelEnd = len(`{"model":`), len(`{"model":`)+len(m)
	return t, nil
}

// ID is the response's id (resp_…).
func (t *Turn) ID() string { return t.id }

// Stream reports whether the client asked for an event stream.
func (t *Turn) Stream() bool { return t.d.stream }

// MaxTokens is max_output_tokens, 0 when absent: for the token estimate.
func (t *Turn) MaxTokens() int64 {
	if m := t.d.MaxOutputTokens; m != nil {
		return *m
	}
	return 0
}

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
func (t *Turn) Answer(chat []byte) ([]byte, error) {
	var a chatAnswer
	if err := json.Unmarshal(chat, &a); err != nil {
		return nil, fmt.Errorf("reading the chat completion: %w", err)
	}
	if len(a.Choices) == 0 {
		return nil, errNoChoice
	}
	c := &a.Choices[0]
	status, details := finishStatus(c.FinishReason)
	var out []Item
	msg := Item{Type: TypeMessage, Role: "assistant"}
	if s := c.Message.Content; s != nil && *s != "" {
		msg.Parts = append(msg.Parts, Part{Type: PartOutputText, Text: *s})
	}
	if s := c.Message.Refusal; s != nil && *s != "" {
		msg.Parts = append(msg.Parts, Part{Type: PartRefusal, Text: *s})
	}
	if msg.Parts != nil || len(c.Message.ToolCalls) == 0 {
		if msg.Parts == nil {
			msg.Parts = []Part{{Type: PartOutputText}} // an empty answer is still a message
		}
		msg.ID = newID("msg_")
		out = append(out, msg)
	}
	for _, tc := range c.Message.ToolCalls {
		out = append(out, functionCall(tc.ID, tc.Function.Name, tc.Function.Arguments))
	}
	itemStatus := StatusCompleted
	if status == StatusIncomplete {
		itemStatus = StatusIncomplete
	}
	items := make([]OutputItem, len(out))
	for i := range out {
		items[i] = OutputItem{Item: out[i], Status: itemStatus}
	}
	r := t.response(status, a.Model, items, usage(a.Usage))
	r.IncompleteDetails = details
	b, err := openaiwire.Append(nil, r)
	if err != nil {
		return nil, fmt.Errorf("encoding the response: %w", err)
	}
	b = append(b, '\n')
	t.keep(out, b)
	return b, nil
}

// functionCall is an output function call item: the provider's call id
// (call_…, toolu_…) kept as call_id, a minted fc_ id.
func functionCall(callID, name, args string) Item {
	if callID == "" {
		callID = newCallID()
	}
	return Item{Type: TypeFunctionCall, ID: newID("fc_"), CallID: callID, Name: name, Arguments: args}
}

// finishStatus maps a chat finish reason to a response status: length
// and content_filter leave it incomplete, everything else completed.
func finishStatus(reason string) (string, *IncompleteDetails) {
	switch reason {
	case openaiwire.FinishLength:
		return StatusIncomplete, &IncompleteDetails{Reason: "max_output_tokens"}
	case openaiwire.FinishContentFilter:
		return StatusIncomplete, &IncompleteDetails{Reason: "content_filter"}
	}
	return StatusCompleted, nil
}

// keep stores the finished response unless the client said store: false.
func (t *Turn) keep(output []Item, response []byte) {
	if !t.d.store {
		return
	}
	t.store.put(t.now(), &Entry{id: t.id, parent: t.parent, input: t.input, output: output, response: response})
}

// autoChoice is tool_choice's echo when the client sent none.
var autoChoice = json.RawMessage(`"auto"`)

// response is the Response for t with status, the model the provider
// named (the client's when it named none), output and usage; the request's
// parameters are echoed.
func (t *Turn) response(status, model string, output []OutputItem, u *Usage) *Response {
	r := &t.d.Request
	if model == "" {
		model = r.Model
	}
	if output == nil {
		output = []OutputItem{}
	}
	resp := &Response{
		ID: t.id, Object: ObjectResponse, CreatedAt: t.createdAt, Status: status,
		Instructions: r.Instructions, MaxOutputTokens: r.MaxOutputTokens, Model: model, Output: output,
		ParallelToolCalls: r.ParallelToolCalls == nil || *r.ParallelToolCalls, PreviousResponseID: r.PreviousResponseID,
		ServiceTier: r.ServiceTier, Store: t.d.store, Temperature: 1, TopP: 1, Truncation: "disabled",
		Usage: u, User: r.User, SafetyIdentifier: r.SafetyIdentifier, PromptCacheKey: r.PromptCacheKey,
		Metadata: r.Metadata, Tools: t.d.tools, ToolChoice: autoChoice,
	}
	if r.Temperature != nil {
		resp.Temperature = *r.Temperature
	}
	if r.TopP != nil {
		resp.TopP = *r.TopP
	}
	if r.Reasoning != nil {
		resp.Reasoning = *r.Reasoning
	}
	if f := t.d.format; f != nil {
		resp.Text.Format = f
	} else {
		resp.Text.Format = &plainText
	}
	if r.Text != nil {
		resp.Text.Verbosity = r.Text.Verbosity
	}
	if !isNull(r.ToolChoice) {
		resp.ToolChoice = r.ToolChoice
	}
	if resp.Metadata == nil {
		resp.Metadata = map[string]string{}
	}
	if resp.Tools == nil {
		resp.Tools = []FunctionTool{}
	}
	return resp
}

// plainText is text.format's echo for plain text; nothing writes to it.
var plainText = Format{Type: "text"}
