package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/responses/wire"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// TestMemory: a step table over an injected clock: TTL, the cap (oldest
// evicted first), delete, item lookup, and a chain that outlives the
// turns it continues.
func TestMemory(t *testing.T) {
	ctx := context.Background()
	t0 := time.Unix(1767225600, 0)
	clock := &fakeClock{t: t0}
	m := NewMemory(Config{TTL: time.Minute, MaxStored: 3}, clock.now)
	record := func(id string, prev *Record) *Record {
		tr := &Turn{Input: []wire.Item{{Type: wire.TypeMessage, Role: "user", Text: id + "?"}},
			Output: []wire.Item{{Type: wire.TypeMessage, ID: "msg_" + id, Role: "assistant", Text: id + "!"}}}
		if prev != nil {
			tr.Prev = prev.Turn
		}
		return &Record{ID: id, Response: []byte(id), Turn: tr}
	}
	put := func(at time.Duration, r *Record) {
		t.Helper()
		clock.t = t0.Add(at)
		if err := m.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	have := func(at time.Duration, ids ...string) {
		t.Helper()
		clock.t = t0.Add(at)
		for _, id := range []string{"a", "b", "c", "d", "e"} {
			want := false
			for _, h := range ids {
				want = want || h == id
			}
			r, err := m.Get(ctx, id)
			if got := err == nil; got != want || (err != nil && !errors.Is(err, ErrNotFound)) {
				t.Errorf("at %s: Get %s = %v, %v; want held %v", at, id, r, err, want)
			}
			if _, err := m.FindItem(ctx, "msg_"+id); (err == nil) != want {
				t.Errorf("at %s: item msg_%s found = %v, want %v", at, id, err == nil, want)
			}
		}
	}
	a := record("a", nil)
	put(0, a)
	b := record("b", a)
	put(10*time.Second, b)
	put(20*time.Second, record("c", nil))
	have(30*time.Second, "a", "b", "c")

	put(30*time.Second, record("d", nil)) // past the cap: a goes
	have(30*time.Second, "b", "c", "d")
	if n, _ := m.Usage(); n != 3 {
		t.Errorf("Usage: %d responses, want 3", n)
	}
	have(70*time.Second, "c", "d") // b stored at 10s expired at 70s
	if got := fmt.Sprint(texts(b.Turn.Conversation())); got != "[a? a! b? b!]" {
		t.Errorf("b's chain after a and b left the store: %s", got)
	}
	if err := m.Delete(ctx, "c"); err != nil {
		t.Errorf("delete c: %v", err)
	}
	if err := m.Delete(ctx, "c"); !errors.Is(err, ErrNotFound) {
		t.Errorf("delete c again: %v, want ErrNotFound", err)
	}
	have(70*time.Second, "d")

	m.Configure(Config{TTL: 5 * time.Second, MaxStored: 1}) // a reload: d stored at 30s is past the new TTL
	have(70 * time.Second)
	put(71*time.Second, record("e", nil))
	have(71*time.Second, "e")
	have(76 * time.Second)
}

func texts(items []wire.Item) []string {
	out := make([]string, len(items))
	for i := range items {
		out[i] = items[i].Text
	}
	return out
}

func TestConfig(t *testing.T) {
	if got := (Config{}).WithDefaults(); got != DefaultConfig() {
		t.Errorf("zero config with defaults = %+v, want %+v", got, DefaultConfig())
	}
	if err := (Config{TTL: -1, MaxStored: -1}).Validate(); err == nil {
		t.Error("negative values validated")
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Error(err)
	}
}

// TestMemoryBytes: a step table for responses.max_bytes: the count
// follows what is stored and the turns a stored chain keeps alive; the
// oldest go first when a response would pass the cap; a response whose
// conversation alone is larger is refused with ErrTooLarge and changes
// nothing; a lower cap on reload evicts at once; an empty store holds no
// bytes.
func TestMemoryBytes(t *testing.T) {
	ctx := context.Background()
	text := func(n int) string { return string(make([]byte, n)) }
	record := func(id string, prev *Record, n int) *Record {
		tr := &Turn{Input: []wire.Item{{Type: wire.TypeMessage, Role: "user", Text: text(n)}}}
		if prev != nil {
			tr.Prev = prev.Turn
		}
		return &Record{ID: id, Response: make([]byte, n), Turn: tr}
	}
	own := func(r *Record) int64 { return recordSize(r) + turnSize(r.Turn) }
	a := record("a", nil, 1000)
	b := record("b", a, 1000)
	c := record("c", nil, 1000)
	unit := own(a) // every record above has this size
	m := NewMemory(Config{MaxBytes: 3 * unit}, nil)
	type step struct {
		name      string
		do        func() error
		wantErr   error
		wantIDs   []string
		wantBytes int64
	}
	for _, s := range []step{
		{"a", func() error { return m.Put(ctx, a) }, nil, []string{"a"}, unit},
		{"b continues a", func() error { return m.Put(ctx, b) }, nil, []string{"a", "b"}, 2 * unit},
		{"deleting a keeps its turn: b holds it", func() error { return m.Delete(ctx, "a") }, nil, []string{"b"}, 2*unit - recordSize(a)},
		{"c fits", func() error { return m.Put(ctx, c) }, nil, []string{"b", "c"}, 3*unit - recordSize(a)},
		{"d passes the cap: b goes, and a's turn with it", func() error { return m.Put(ctx, record("d", nil, 1000)) }, nil, []string{"c", "d"}, 2 * unit},
		{"a response alone larger than the cap", func() error { return m.Put(ctx, record("big", nil, int(3*unit))) }, ErrTooLarge, []string{"c", "d"}, 2 * unit},
		{"a chain larger than the cap", func() error {
			prev := c // held: counted once
			for range 4 {
				prev = record("x", prev, 1000) // never stored
			}
			return m.Put(ctx, record("z", prev, 1000))
		}, ErrTooLarge, []string{"c", "d"}, 2 * unit},
		{"a lower cap evicts the oldest", func() error { m.Configure(Config{MaxBytes: unit}); return nil }, nil, []string{"d"}, unit},
		{"deleting the last empties the count", func() error { return m.Delete(ctx, "d") }, nil, nil, 0},
	} {
		if err := s.do(); !errors.Is(err, s.wantErr) {
			t.Fatalf("%s: error %v, want %v", s.name, err, s.wantErr)
		}
		n, bytes := m.Usage()
		var ids []string
		for _, id := range []string{"a", "b", "c", "d", "big", "x", "z"} {
			if _, err := m.Get(ctx, id); err == nil {
				ids = append(ids, id)
			}
		}
		if fmt.Sprint(ids) != fmt.Sprint(s.wantIDs) || n != len(s.wantIDs) || bytes != s.wantBytes {
			t.Errorf("%s: holds %v (%d) in %d bytes; want %v in %d", s.name, ids, n, bytes, s.wantIDs, s.wantBytes)
		}
	}
	if len(m.held) != 0 {
		t.Errorf("an empty store still holds %d turns", len(m.held))
	}
	raw := &Turn{Input: []wire.Item{{Type: "web_search_call", Raw: make([]byte, 5000)}}}
	if got := turnSize(raw); got < 5000 {
		t.Errorf("a turn holding 5000 bytes kept as sent is estimated at %d", got)
	}
}
