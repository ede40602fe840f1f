package turn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/llmrouter/llmrouter/internal/openaiwire"
	"github.com/llmrouter/llmrouter/internal/responses"
	"github.com/llmrouter/llmrouter/internal/responses/store"
	"github.com/llmrouter/llmrouter/internal/responses/wire"
)

// Turn is one Responses request on its way through the router: its id,
// the conversation it continues and its own input, resolved from the
// store; the Response it echoes; and the storing of the answer. How it
// is served (translated onto chat completions, internal/responses/chat,
// or natively, internal/responses/native) is not its business.
type Turn struct {
	d         *responses.Decoded
	id        string
	createdAt int64
	prev      *store.Turn // previous_response_id's turn; nil for a first turn
	input     []wire.Item // this turn's input, item_references resolved
	detached  bool        // input no longer points into the request body (kept)
	store     store.Store
	ctx       context.Context // for the store: the request's, without its cancellation
	storeErr  error
	// unresolved: an id the router does not hold was left to a native
	// provider.
	unresolved bool
	// remember, when not nil, receives the record of every finished
	// answer, whatever store says (Remember).
	remember func(*store.Record)
}

// New resolves d's previous_response_id and item_references from s.
// now is the clock (nil means time.Now) for created_at. A store that
// cannot answer is a 503 (Unavailable), never a conversation served
// without its history. An id s does not hold is OpenAI's 400, but for
// two: a request for a native Responses API (d.Native), or for a model
// that has one (d.NativeTarget), leaves it to the provider, which may
// hold it (Unresolved); an item_reference to a reasoning item (rs_…) is
// kept as sent, as a turn translated onto chat could not use the item
// anyway.
func New(ctx context.Context, d *responses.Decoded, s store.Store, now func() time.Time) (*Turn, *responses.Error) {
	if now == nil {
		now = time.Now
	}
	t := &Turn{d: d, id: wire.NewID("resp_"), createdAt: now().Unix(), store: s, ctx: context.WithoutCancel(ctx)}
	native := d.Native != nil || d.NativeTarget
	if p := d.PreviousResponseID; p != nil && *p != "" {
		rec, err := s.Get(ctx, *p)
		switch {
		case errors.Is(err, store.ErrNotFound) && native:
			t.unresolved = true
		case errors.Is(err, store.ErrNotFound):
			return nil, &responses.Error{Status: http.StatusBadRequest, Code: "previous_response_not_found", Param: "previous_response_id",
				Message: fmt.Sprintf("Previous response with id '%s' not found.", responses.Cut(*p))}
		case err != nil:
			return nil, responses.Unavailable("previous_response_id", err)
		case rec.Owner != "" && d.Native != nil:
			// Running at its provider: the router has no output to expand;
			// the provider resolves the id.
			t.unresolved = true
		case rec.Owner != "":
			return nil, responses.BadRequest("previous_response_id", "Previous response with id '%s' is still running in the background: "+
				"retrieve it (GET /v1/responses/%s) once it has completed, then continue it.", responses.Cut(*p), responses.Cut(*p))
		default:
			t.prev = rec.Turn
		}
	}
	t.input = make([]wire.Item, 0, len(d.Items))
	finder, _ := s.(store.ItemFinder)
	for i, it := range d.Items {
		if it.Type != wire.TypeItemReference {
			if it.ID == "" {
				// Every stored item has an id: input_items pages by them,
				// and an item_reference may name them.
				it.ID = wire.NewID(idPrefix[it.Type])
			}
			t.input = append(t.input, it)
			continue
		}
		err := store.ErrNotFound
		var ref wire.Item
		if finder != nil {
			ref, err = finder.FindItem(ctx, it.ID)
		}
		switch {
		case errors.Is(err, store.ErrNotFound) && (native || strings.HasPrefix(it.ID, "rs_")):
			// For a native provider to resolve; or a reasoning item (the
			// Vercel AI SDK refers to them by id), which a turn translated
			// onto chat could not use anyway: kept as sent, not refused.
			t.unresolved = t.unresolved || !strings.HasPrefix(it.ID, "rs_")
			it.Raw = d.Sent[i]
			t.input = append(t.input, it)
			continue
		case errors.Is(err, store.ErrNotFound):
			// OpenAI's words, and its null code.
			e := responses.BadRequest("input", "Item with id '%s' not found. Items are not persisted when `store` is set to false. "+
				"Try again with `store` set to true, or remove this item from your input.", responses.Cut(it.ID))
			e.Code = ""
			return nil, e
		case err != nil:
			return nil, responses.Unavailable(fmt.Sprintf("input[%d]", i), err)
		}
		t.input = append(t.input, ref)
	}
	return t, nil
}

// idPrefix is the prefix of an input item's minted id, by its type.
var idPrefix = map[string]string{wire.TypeMessage: "msg_", wire.TypeFunctionCall: "fc_", wire.TypeFunctionCallOutput: "fco_"}

// Unresolved reports whether the turn names what the router does not
// hold (a previous_response_id, an item_reference), left to a native
// provider: only a native target can serve it.
func (t *Turn) Unresolved() bool { return t.unresolved }

// ID is the response's id (resp_…).
func (t *Turn) ID() string { return t.id }

// Decoded is the request.
func (t *Turn) Decoded() *responses.Decoded { return t.d }

// Stream reports whether the client asked for an event stream.
func (t *Turn) Stream() bool { return t.d.Stream() }

// MaxTokens is max_output_tokens, 0 when absent: for the token estimate.
func (t *Turn) MaxTokens() int64 {
	if m := t.d.MaxOutputTokens; m != nil {
		return *m
	}
	return 0
}

// Prev is the turn previous_response_id continues, from the store; nil
// for a first turn, and for an id left to a native provider.
func (t *Turn) Prev() *store.Turn { return t.prev }

// Input is this turn's input, aligned with Decoded.Items: item_references
// resolved (an unresolved one, left to a native provider, keeps its Raw).
func (t *Turn) Input() []wire.Item { return t.input }

// Conversation is what the provider is to see: the chain's items, oldest
// first, then this turn's input.
func (t *Turn) Conversation() []wire.Item {
	if t.prev == nil {
		return t.input
	}
	return append(t.prev.Conversation(), t.input...)
}

// Remember makes f receive the record of the turn's finished answer
// (Keep, KeepAs) whatever the request's store says: a WebSocket
// connection keeps its latest response for previous_response_id even
// with store: false, as OpenAI's does (docs/ARCHITECTURE.md, "Responses
// API over WebSocket"). f must not change the record.
func (t *Turn) Remember(f func(*store.Record)) { t.remember = f }

// StoreErr is why the answer could not be stored (nil when it was, or was
// not to be): the answer then says store: false.
func (t *Turn) StoreErr() error { return t.storeErr }

// Keep returns r as JSON (one line and a newline), storing it with output
// unless the client sent store: false. A response the store refused is
// still answered, saying store: false, and StoreErr says why.
func (t *Turn) Keep(output []wire.Item, r *wire.Response) []byte {
	b, err := openaiwire.Append(nil, r)
	if err != nil {
		return nil // cannot happen: every raw value in r came from valid JSON
	}
	b = append(b, '\n')
	if !t.d.Stored() && t.remember == nil {
		return b
	}
	rec := &store.Record{ID: t.id, Response: b, Turn: &store.Turn{ID: t.id, Prev: t.prev, Input: t.kept(), Output: output}}
	if t.remember != nil {
		t.remember(rec)
	}
	if !t.d.Stored() {
		return b
	}
	if t.storeErr = t.store.Put(t.ctx, rec); t.storeErr != nil {
		r.Store = false
		b, _ = openaiwire.Append(b[:0], r)
		b = append(b, '\n')
	}
	return b
}

// KeepAs stores a provider's own Response (a native answer) under its
// id, with its JSON and output items, unless the client sent store:
// false; StoreErr says why the store refused it.
func (t *Turn) KeepAs(id string, output []wire.Item, response []byte) {
	t.id = id
	if !t.d.Stored() && t.remember == nil {
		return
	}
	rec := &store.Record{ID: id, Response: response, Turn: &store.Turn{Prev: t.prev, Input: t.kept(), Output: output}}
	if t.remember != nil {
		t.remember(rec)
	}
	if !t.d.Stored() {
		return
	}
	t.storeErr = t.store.Put(t.ctx, rec)
}

// KeepRunning stores a response its provider (owner) is still running in
// the background, under the provider's id, with this turn's input and the
// provider's first answer, unless the client sent store: false: reads of
// it go to the provider until it finishes.
func (t *Turn) KeepRunning(id, owner string, response []byte) {
	t.id = id
	if !t.d.Stored() {
		return
	}
	rec := &store.Record{ID: id, Response: response, Owner: owner, Turn: &store.Turn{Prev: t.prev, Input: t.kept()}}
	t.storeErr = t.store.Put(t.ctx, rec)
}

// kept is the turn's input as a stored turn keeps it: detached from the
// request's body, which its items point into (wire.Detach).
func (t *Turn) kept() []wire.Item {
	if !t.detached {
		t.input, t.detached = wire.Detach(t.input), true
	}
	return t.input
}

// autoChoice is tool_choice's echo when the client sent none.
var autoChoice = json.RawMessage(`"auto"`)

// Response is the Response for t with status, the model the provider
// named (the client's when it named none), output and usage; the
// request's parameters are echoed.
func (t *Turn) Response(status, model string, output []wire.OutputItem, u *wire.Usage) *wire.Response {
	r := &t.d.Request
	if model == "" {
		model = r.Model
	}
	if output == nil {
		output = []wire.OutputItem{}
	}
	resp := &wire.Response{
		ID: t.id, Object: wire.ObjectResponse, CreatedAt: t.createdAt, Status: status,
		Instructions: r.Instructions, MaxOutputTokens: r.MaxOutputTokens, Model: model, Output: output,
		ParallelToolCalls: r.ParallelToolCalls == nil || *r.ParallelToolCalls, PreviousResponseID: r.PreviousResponseID,
		ServiceTier: r.ServiceTier, Store: t.d.Stored(), Temperature: 1, TopP: 1, Truncation: "disabled",
		Usage: u, User: r.User, SafetyIdentifier: r.SafetyIdentifier, PromptCacheKey: r.PromptCacheKey,
		Metadata: r.Metadata, Tools: r.Tools, ToolChoice: autoChoice,
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
	if f := t.d.Format; f != nil {
		resp.Text.Format = f
	} else {
		resp.Text.Format = &plainText
	}
	if r.Text != nil {
		resp.Text.Verbosity = r.Text.Verbosity
	}
	if tc := bytes.TrimSpace(r.ToolChoice); len(tc) > 0 && string(tc) != "null" {
		resp.ToolChoice = r.ToolChoice
	}
	if resp.Metadata == nil {
		resp.Metadata = map[string]string{}
	}
	if resp.Tools == nil {
		resp.Tools = []json.RawMessage{}
	}
	return resp
}

// plainText is text.format's echo for plain text; nothing writes to it.
var plainText = wire.Format{Type: "text"}
