package responses

import (
	"fmt"
	"testing"
	"time"
)

// TestStore: a step table over an injected clock: TTL, the cap (oldest
// evicted first), delete, item lookup, and a chain that outlives the
// turns it continues.
func TestStore(t *testing.T) {
	t0 := time.Unix(1767225600, 0)
	s := NewStore(Config{TTL: time.Minute, MaxStored: 3})
	entry := func(id string, parent *Entry) *Entry {
		return &Entry{id: id, parent: parent, input: []Item{{Type: TypeMessage, Role: "user", Text: id + "?"}},
			output: []Item{{Type: TypeMessage, ID: "msg_" + id, Role: "assistant", Text: id + "!"}}, response: []byte(id)}
	}
	have := func(at time.Duration, ids ...string) {
		t.Helper()
		for _, id := range []string{"a", "b", "c", "d", "e"} {
			want := false
			for _, h := range ids {
				want = want || h == id
			}
			if got := s.Response(t0.Add(at), id) != nil; got != want {
				t.Errorf("at %s: holds %s = %v, want %v", at, id, got, want)
			}
			if _, got := s.item(t0.Add(at), "msg_"+id); got != want {
				t.Errorf("at %s: item msg_%s found = %v, want %v", at, id, got, want)
			}
		}
	}
	a := entry("a", nil)
	s.put(t0, a)
	b := entry("b", a)
	s.put(t0.Add(10*time.Second), b)
	s.put(t0.Add(20*time.Second), entry("c", nil))
	have(30*time.Second, "a", "b", "c")

	s.put(t0.Add(30*time.Second), entry("d", nil)) // past the cap: a goes
	have(30*time.Second, "b", "c", "d")
	if s.Len() != 3 {
		t.Errorf("Len = %d, want 3", s.Len())
	}
	have(70*time.Second, "c", "d") // b stored at 10s expired at 70s
	if got := fmt.Sprint(texts(b.context())); got != "[a? a! b? b!]" {
		t.Errorf("b's chain after a and b left the store: %s", got)
	}
	if !s.Delete(t0.Add(70*time.Second), "c") || s.Delete(t0.Add(70*time.Second), "c") {
		t.Error("delete: want true once, then false")
	}
	have(70*time.Second, "d")

	s.Configure(Config{TTL: 5 * time.Second, MaxStored: 1}, t0.Add(70*time.Second)) // a reload: d stored at 30s is past the new TTL
	have(70 * time.Second)
	s.put(t0.Add(71*time.Second), entry("e", nil))
	have(71*time.Second, "e")
	have(76 * time.Second)
}

func texts(items []Item) []string {
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
