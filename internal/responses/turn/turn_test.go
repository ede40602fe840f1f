package turn

import (
	"context"
	"testing"

	"github.com/llmrouter/llmrouter/internal/responses"
	"github.com/llmrouter/llmrouter/internal/responses/store"
	"github.com/llmrouter/llmrouter/internal/responses/wire"
)

// TestReasoningKeptAsSent: a turn's reasoning items, and an
// item_reference to a reasoning item the store does not hold, stay in its
// input as the client sent them (a later native turn sends them on),
// aligned with the request's items; a reference to anything else the
// store does not hold is OpenAI's 400.
func TestReasoningKeptAsSent(t *testing.T) {
	ctx := context.Background()
	s := store.NewMemory(store.Config{}, nil)
	body := `{"model":"m","input":[{"role":"user","content":"hi"},` +
		`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"},{"type":"item_reference","id":"rs_gone"}]}`
	d, e := responses.Decode([]byte(body))
	if e != nil {
		t.Fatal(e)
	}
	tn, e := New(ctx, d, s, nil)
	if e != nil {
		t.Fatal(e)
	}
	in := tn.Input()
	if len(in) != 3 || in[1].Type != wire.TypeReasoning || string(in[1].Raw) != `{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"}` ||
		in[2].Type != wire.TypeItemReference || string(in[2].Raw) != `{"type":"item_reference","id":"rs_gone"}` {
		t.Errorf("input %+v", in)
	}
	d, _ = responses.Decode([]byte(`{"model":"m","input":[{"type":"item_reference","id":"msg_gone"}]}`))
	if _, e := New(ctx, d, s, nil); e == nil || e.Status != 400 || e.Param != "input" {
		t.Errorf("a reference to a message the store does not hold: %v, want 400", e)
	}
}
