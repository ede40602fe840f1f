package native

import (
	"context"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/responses"
	"github.com/llmrouter/llmrouter/internal/responses/store"
	"github.com/llmrouter/llmrouter/internal/responses/turn"
	"github.com/llmrouter/llmrouter/internal/responses/wire"
)

// prepare decodes body, makes its turn over s and prepares the call.
func prepare(t testing.TB, s store.Store, body string) *Call {
	t.Helper()
	d, e := responses.Decode([]byte(body))
	if e != nil {
		t.Fatal(e)
	}
	tn, e := turn.New(context.Background(), d, s, nil)
	if e != nil {
		t.Fatal(e)
	}
	c, e := Prepare(tn, []byte(body))
	if e != nil {
		t.Fatal(e)
	}
	return c
}

func put(t testing.TB, s store.Store, r *store.Record) {
	t.Helper()
	if err := s.Put(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

// TestPrepare: the body a native provider gets. Nothing the router holds:
// the client's bytes. A previous_response_id it holds: the chain's items
// in input, oldest first, without the ids it minted, reasoning without
// encrypted content left out, then this turn's items as sent; no
// previous_response_id. A resolved item_reference: the item it names.
func TestPrepare(t *testing.T) {
	s := store.NewMemory(store.Config{}, nil)
	earlier := &store.Turn{
		Input: []wire.Item{{Type: wire.TypeMessage, ID: "msg_minted", Role: "user", Text: "I am Ada."}},
		Output: []wire.Item{
			{Type: wire.TypeReasoning, ID: "rs_1", Raw: []byte(`{"type":"reasoning","id":"rs_1","summary":[]}`)},
			{Type: wire.TypeReasoning, ID: "rs_2", Raw: []byte(`{"type":"reasoning","id":"rs_2","summary":[],"encrypted_content":"gAAA"}`)},
			{Type: "web_search_call", ID: "ws_1", Raw: []byte(`{"type":"web_search_call","id":"ws_1","status":"completed"}`)},
			{Type: wire.TypeFunctionCall, ID: "fc_minted", CallID: "toolu_1", Name: "f", Arguments: "{}"},
			{Type: wire.TypeFunctionCallOutput, ID: "fco_minted", CallID: "toolu_1", Text: "42"},
			{Type: wire.TypeMessage, ID: "msg_out", Role: "assistant", Parts: []wire.Part{{Type: wire.PartOutputText, Text: "Hi "}, {Type: wire.PartRefusal, Text: "no."}}},
		},
	}
	put(t, s, &store.Record{ID: "resp_1", Response: []byte("{}"), Turn: earlier})

	t.Run("nothing held: the client's bytes", func(t *testing.T) {
		body := `{"model":"m",  "input":[{"type":"web_search_call","id":"ws_9"}], "tools":[{"type":"web_search"}],"x-future":1}`
		c := prepare(t, s, body)
		if string(c.Body) != body || string(c.Body[c.ModelStart:c.ModelEnd]) != `"m"` {
			t.Errorf("got %s [%d:%d]", c.Body, c.ModelStart, c.ModelEnd)
		}
	})
	t.Run("a held previous_response_id expands", func(t *testing.T) {
		c := prepare(t, s, `{"model":"m","previous_response_id":"resp_1","input":[{"role":"user","content":"next","phase":"x"}],"tools":[{"type":"web_search"}]}`)
		b := gjson.ParseBytes(c.Body)
		if b.Get("previous_response_id").Exists() || b.Get("tools.0.type").Str != "web_search" || string(c.Body[c.ModelStart:c.ModelEnd]) != `"m"` {
			t.Errorf("body %s", c.Body)
		}
		want := `[{"type":"message","role":"user","content":"I am Ada."},` +
			`{"type":"reasoning","id":"rs_2","summary":[],"encrypted_content":"gAAA"},` +
			`{"type":"web_search_call","id":"ws_1","status":"completed"},` +
			`{"type":"function_call","call_id":"toolu_1","name":"f","arguments":"{}"},` +
			`{"type":"function_call_output","call_id":"toolu_1","output":"42"},` +
			`{"type":"message","role":"assistant","content":"Hi no."},` +
			`{"role":"user","content":"next","phase":"x"}]`
		if got := b.Get("input").Raw; got != want {
			t.Errorf("input\ngot  %s\nwant %s", got, want)
		}
		out, err := c.Answer([]byte(`{"id":"resp_p","status":"completed","previous_response_id":null,"output":[]}`), "oa")
		if err != nil || gjson.GetBytes(out, "previous_response_id").Str != "resp_1" {
			t.Errorf("answer %s, %v; want previous_response_id as sent", out, err)
		}
	})
	t.Run("a held item_reference resolves; an unknown one stays", func(t *testing.T) {
		c := prepare(t, s, `{"model":"m","input":[{"type":"item_reference","id":"msg_out"},{"type":"item_reference","id":"msg_elsewhere"}],"background":true}`)
		want := `[{"type":"message","role":"assistant","content":"Hi no."},{"type":"item_reference","id":"msg_elsewhere"}]`
		if got := gjson.GetBytes(c.Body, "input").Raw; got != want {
			t.Errorf("input\ngot  %s\nwant %s", got, want)
		}
	})
	t.Run("an unknown previous_response_id is the provider's", func(t *testing.T) {
		body := `{"model":"m","previous_response_id":"resp_at_openai","input":"x","background":true}`
		if c := prepare(t, s, body); string(c.Body) != body {
			t.Errorf("got %s", c.Body)
		}
	})
}

// TestAnswer: the provider's Response is the client's answer; a finished
// one is stored with its output typed where chat can take it and kept as
// sent otherwise; one still running is recorded as the provider's; a
// failed one is not kept.
func TestAnswer(t *testing.T) {
	s := store.NewMemory(store.Config{}, nil)
	ctx := context.Background()
	c := prepare(t, s, `{"model":"m","input":"x","tools":[{"type":"web_search"}]}`)
	body := `{"id":"resp_a","status":"completed","output":[{"type":"web_search_call","id":"ws_1","action":{"query":"q"}},` +
		`{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[{"type":"url_citation"}]}]},` +
		`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{}"}]}`
	out, err := c.Answer([]byte(body), "oa")
	if err != nil || string(out) != body {
		t.Fatalf("answer %s, %v; want the provider's bytes", out, err)
	}
	rec, err := s.Get(ctx, "resp_a")
	if err != nil || string(rec.Response) != body || rec.Owner != "" {
		t.Fatalf("stored %+v, %v", rec, err)
	}
	o := rec.Turn.Output
	if len(o) != 3 || o[0].Raw == nil || o[0].Type != "web_search_call" || o[1].Raw != nil || o[1].Parts[0].Text != "hi" ||
		o[2].CallID != "call_1" || o[2].Raw != nil || rec.Turn.Input[0].Text != "x" {
		t.Errorf("stored tn %+v", rec.Turn)
	}
	if _, err := s.FindItem(ctx, "msg_1"); err != nil {
		t.Errorf("an item_reference to its message: %v", err)
	}

	running := prepare(t, s, `{"model":"m","input":"y","background":true}`)
	if _, err := running.Answer([]byte(`{"id":"resp_b","status":"queued","output":[]}`), "oa"); err != nil {
		t.Fatal(err)
	}
	rec, err = s.Get(ctx, "resp_b")
	if err != nil || rec.Owner != "oa" || rec.Turn.Input[0].Text != "y" || rec.Turn.Output != nil {
		t.Fatalf("running: %+v, %v", rec, err)
	}
	if Finished(rec, []byte(`{"id":"resp_b","status":"in_progress","output":[]}`)) != nil {
		t.Error("a response still in progress was finished")
	}
	done := Finished(rec, []byte(`{"id":"resp_b","status":"completed","output":[{"type":"message","id":"m","role":"assistant","content":[{"type":"output_text","text":"ok"}]}]}`))
	if done == nil || done.Owner != "" || done.Turn.Input[0].Text != "y" || done.Turn.Output[0].Parts[0].Text != "ok" {
		t.Errorf("finished %+v", done)
	}

	failed := prepare(t, s, `{"model":"m","input":"z","background":true}`)
	if _, err := failed.Answer([]byte(`{"id":"resp_c","status":"failed","output":[]}`), "oa"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "resp_c"); err == nil {
		t.Error("a failed response was stored")
	}
	for _, bad := range []string{`<html>`, `{"status":"completed"}`} {
		if _, err := failed.Answer([]byte(bad), "oa"); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestEvents: each provider event goes out under its own name, unchanged
// but for previous_response_id; the terminal response is stored before it
// is written; a failure after the commit ends with an error event and
// response.failed numbered on from the provider's.
// TestEventNames: an event is written under its type only when that is
// [a-z_.]+; any other type is a malformed event (issue 31, finding 4).
func TestEventNames(t *testing.T) {
	s := store.NewMemory(store.Config{}, nil)
	for _, typ := range []string{`response.in_progress\n\nevent: response.completed`, `response.in_progress\r`, "Response.created", "response.output_text.delta2"} {
		ev := prepare(t, s, `{"model":"m","input":"b","stream":true,"tools":[{"type":"web_search"}]}`).Events()
		got, err := ev.Chunk([]byte("x"), []byte(`{"type":"`+typ+`","sequence_number":1}`))
		if outcome.KindOf(err) != outcome.ServerError || string(got) != "x" {
			t.Errorf("%s: got %q, %v; want a server_error and nothing written", typ, got, err)
		}
	}
}

func TestEvents(t *testing.T) {
	s := store.NewMemory(store.Config{}, nil)
	put(t, s, &store.Record{ID: "resp_0", Response: []byte("{}"), Turn: &store.Turn{Input: []wire.Item{{Type: wire.TypeMessage, Role: "user", Text: "a"}}}})
	events := []string{
		`{"type":"response.created","sequence_number":0,"response":{"id":"resp_s","status":"in_progress","previous_response_id":null,"output":[]}}`,
		`{"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"hi"}`,
		`{"type":"response.completed","sequence_number":2,"response":{"id":"resp_s","status":"completed","previous_response_id":null,` +
			`"output":[{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"hi"}]}]}}`,
	}
	c := prepare(t, s, `{"model":"m","previous_response_id":"resp_0","input":"b","stream":true,"tools":[{"type":"web_search"}]}`)
	ev := c.Events()
	var out []byte
	for _, e := range events {
		var err error
		if out, err = ev.Chunk(out, []byte(e)); err != nil {
			t.Fatal(err)
		}
	}
	out = ev.End(out)
	blocks := strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n\n")
	if len(blocks) != 3 {
		t.Fatalf("got %q", out)
	}
	for i, b := range blocks {
		name, data, _ := strings.Cut(b, "\n")
		typ := gjson.Get(events[i], "type").Str
		if name != "event: "+typ || !strings.HasPrefix(data, "data: ") {
			t.Errorf("event %d: %q", i, b)
		}
		data = strings.TrimPrefix(data, "data: ")
		if i == 1 && data != events[1] {
			t.Errorf("event 1 changed: %s", data)
		}
		if i != 1 && gjson.Get(data, "response.previous_response_id").Str != "resp_0" {
			t.Errorf("event %d: previous_response_id not as sent: %s", i, data)
		}
	}
	rec, err := s.Get(context.Background(), "resp_s")
	if err != nil || gjson.GetBytes(rec.Response, "previous_response_id").Str != "resp_0" || rec.Turn.Prev == nil || rec.Turn.Output[0].Parts[0].Text != "hi" {
		t.Fatalf("stored %+v, %v", rec, err)
	}

	cut := prepare(t, s, `{"model":"m","input":"b","stream":true,"tools":[{"type":"web_search"}]}`).Events()
	out, _ = cut.Chunk(nil, []byte(events[0]))
	out, _ = cut.Chunk(out, []byte(events[1]))
	out = cut.Fail(out[:0], outcome.Network)
	blocks = strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n\n")
	if len(blocks) != 2 || !strings.HasPrefix(blocks[0], "event: error\n") || !strings.HasPrefix(blocks[1], "event: response.failed\n") {
		t.Fatalf("got %q", out)
	}
	e := gjson.Get(strings.TrimPrefix(strings.SplitN(blocks[0], "\n", 2)[1], "data: "), "@this")
	f := gjson.Get(strings.TrimPrefix(strings.SplitN(blocks[1], "\n", 2)[1], "data: "), "@this")
	if e.Get("sequence_number").Int() != 2 || e.Get("error.code").Str != "upstream_error" || f.Get("sequence_number").Int() != 3 ||
		f.Get("response.status").Str != "failed" || f.Get("response.id").Str != "resp_s" || f.Get("response.error.code").Str != "server_error" {
		t.Errorf("error %s, failed %s", e.Raw, f.Raw)
	}
}
