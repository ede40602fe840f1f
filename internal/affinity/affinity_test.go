package affinity

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/tidwall/gjson"
	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

var (
	a = Target{Provider: "a", Model: "m-a"}
	b = Target{Provider: "b", Model: "m-b"}
)

func TestTable(t *testing.T) {
	const ttl = time.Hour
	type step struct {
		op     string // put, get
		key    Key
		target Target // put: what served; get: want (zero: absent)
		at     time.Duration
	}
	tests := []struct {
		name     string
		capacity int
		steps    []step
	}{
		{"absent", 4, []step{{"get", 1, Target{}, 0}}},
		{"put then get", 4, []step{{"put", 1, a, 0}, {"get", 1, a, time.Minute}, {"get", 2, Target{}, time.Minute}}},
		{"the last served wins", 4, []step{{"put", 1, a, 0}, {"put", 1, b, time.Second}, {"get", 1, b, time.Minute}}},
		{"expired after the ttl", 4, []step{{"put", 1, a, 0}, {"get", 1, a, ttl}, {"get", 1, Target{}, ttl + 1}}},
		{"a turn renews the ttl", 4, []step{{"put", 1, a, 0}, {"put", 1, a, 50 * time.Minute}, {"get", 1, a, 100 * time.Minute}}},
		{"full: the least recently served goes", 2, []step{
			{"put", 1, a, 0}, {"put", 2, b, 1}, {"put", 1, a, 2}, // 2 is now the least recently served
			{"put", 3, b, 3},
			{"get", 1, a, 4}, {"get", 2, Target{}, 4}, {"get", 3, b, 4}}},
		{"an expired slot is reused before growing", 2, []step{
			{"put", 1, a, 0}, {"put", 2, b, 2 * ttl}, {"get", 1, Target{}, 2 * ttl}, {"get", 2, b, 2 * ttl}}},
		{"a dropped entry's slot is reused", 1, []step{
			{"put", 1, a, 0}, {"get", 1, Target{}, 2 * ttl}, {"put", 2, b, 2 * ttl}, {"get", 2, b, 2 * ttl}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := New(tt.capacity, nil)
			for i, s := range tt.steps {
				switch s.op {
				case "put":
					tb.Put(s.key, s.target, at(s.at), ttl)
				case "get":
					got, ok := tb.Get(s.key, at(s.at), ttl)
					if ok != (s.target != Target{}) || got != s.target {
						t.Fatalf("step %d: Get(%d) at %s = %v %v, want %v", i, s.key, s.at, got, ok, s.target)
					}
				}
				if n := tb.Len(); n > tt.capacity {
					t.Fatalf("step %d: %d entries, over the capacity %d", i, n, tt.capacity)
				}
			}
		})
	}
}

// TestTableChurn: many conversations through a small table keep it
// within its capacity, its order consistent, and the latest ones found.
func TestTableChurn(t *testing.T) {
	tb := New(64, nil)
	for i := range 10_000 {
		now := at(time.Duration(i) * time.Second)
		tb.Put(Key(i%1000+1), a, now, time.Hour)
		if i%7 == 0 {
			tb.Get(Key(i%300+1), now, 30*time.Second)
		}
	}
	if n := tb.Len(); n > 64 {
		t.Fatalf("%d entries, over the capacity 64", n)
	}
	for k := range 32 {
		key := Key((9999-k)%1000 + 1)
		if _, ok := tb.Get(key, at(9999*time.Second), time.Hour); !ok {
			t.Errorf("key %d served %ds ago is gone", key, k)
		}
	}
	// The list and the index agree.
	tb.mu.Lock()
	defer tb.mu.Unlock()
	n := 0
	for i := tb.head; i >= 0; i = tb.entries[i].next {
		if tb.index[tb.entries[i].key] != i {
			t.Fatalf("entry %d is not indexed under its key", i)
		}
		n++
	}
	if n != len(tb.index) {
		t.Errorf("%d entries linked, %d indexed", n, len(tb.index))
	}
}

func TestTableDoesNotAllocate(t *testing.T) {
	tb := New(1024, nil)
	now := t0
	for i := range 1024 {
		tb.Put(Key(i+1), a, now, time.Hour)
	}
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		i++
		tb.Put(Key(i%2048+1), b, now, time.Hour) // half new (evicting), half known
		tb.Get(Key(i%1024+1), now, time.Hour)
	}); n != 0 {
		t.Errorf("%v allocations per Put and Get, want 0", n)
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	tb := New(0, reg)
	if n := testutil.CollectAndCount(reg, "llmrouter_affinity_total"); n != 3 {
		t.Fatalf("%d series at start, want 3 (kept, moved, new)", n)
	}
	tb.Count(OutcomeKept)
	tb.Count(OutcomeKept)
	tb.Count(OutcomeMoved)
	want := `
# HELP llmrouter_affinity_total Served requests with a conversation identity, by what affinity did: kept on the target that served the conversation last, moved elsewhere, or new.
# TYPE llmrouter_affinity_total counter
llmrouter_affinity_total{outcome="kept"} 2
llmrouter_affinity_total{outcome="moved"} 1
llmrouter_affinity_total{outcome="new"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "llmrouter_affinity_total"); err != nil {
		t.Error(err)
	}
}

func TestConfig(t *testing.T) {
	for _, tt := range []struct {
		c    Config
		want string
	}{
		{Config{}, ""},
		{DefaultConfig(), ""},
		{Config{Enabled: true, TTL: time.Second}, ""},
		{Config{Enabled: true, TTL: time.Millisecond}, "routing.affinity.ttl: must be at least 1s (or 0 for the default), got 1ms"},
		{Config{TTL: -time.Hour}, "routing.affinity.ttl: must be at least 1s (or 0 for the default), got -1h0m0s"},
	} {
		err := tt.c.Validate()
		if got := ""; err != nil {
			got = err.Error()
			if got != tt.want {
				t.Errorf("%+v: %q, want %q", tt.c, got, tt.want)
			}
		} else if tt.want != "" {
			t.Errorf("%+v: valid, want %q", tt.c, tt.want)
		}
	}
	if got := (Config{Enabled: true}).WithDefaults().TTL; got != DefaultTTL {
		t.Errorf("default ttl %s, want %s", got, DefaultTTL)
	}
}

func TestOpening(t *testing.T) {
	const (
		sys    = `{"role":"system","content":"You are terse."}`
		user1  = `{"role":"user","content":"Write a haiku."}`
		asst1  = `{"role":"assistant","content":"Leaves fall."}`
		user2  = `{"role":"user","content":"Another."}`
		other  = `{"role":"user","content":"Write a limerick."}`
		parts  = `{"role":"user","content":[{"type":"text","text":"Write a haiku."}]}`
		cached = `{"role":"user","content":[{"type":"text","text":"Write a haiku.","cache_control":{"type":"ephemeral"}}]}`
	)
	msgs := func(ms ...string) []byte { return []byte("[" + strings.Join(ms, ",") + "]") }
	first := Opening(nil, msgs(sys, user1))
	if first.Key == 0 || !first.First {
		t.Fatalf("the opening itself: %+v, want a key, first", first)
	}
	tests := []struct {
		name      string
		system    string
		msgs      []byte
		same      bool // the same conversation as first
		wantFirst bool
	}{
		{"its second turn", "", msgs(sys, user1, asst1, user2), true, false},
		{"its third turn", "", msgs(sys, user1, asst1, user2, asst1, user2), true, false},
		{"another opening", "", msgs(sys, other), false, true},
		{"without the system prompt", "", msgs(user1), false, true},
		{"content as text blocks, a cache mark added", "", msgs(`{"role":"system","content":[{"type":"text","text":"You are terse."}]}`, cached, asst1, user2), true, false},
		{"two text blocks", "", msgs(sys, `{"role":"user","content":[{"type":"text","text":"Write a"},{"type":"text","text":" haiku."}]}`), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Opening([]byte(tt.system), tt.msgs)
			if (got.Key == first.Key) != tt.same || got.First != tt.wantFirst || got.Key == 0 {
				t.Errorf("%+v against %+v: same %v first %v, want same %v first %v", got, first, got.Key == first.Key, got.First, tt.same, tt.wantFirst)
			}
		})
	}
	// Text parts hash as their text: a cache_control mark that moves does
	// not change the identity.
	if p, c := Opening(nil, msgs(parts, asst1)), Opening(nil, msgs(cached, asst1, user2)); p.Key != c.Key {
		t.Error("a cache_control mark changed the identity")
	}
	// Messages' system prompt, as a string or as blocks.
	s1 := Opening([]byte(`"You are terse."`), msgs(user1, asst1))
	s2 := Opening([]byte(`[{"type":"text","text":"You are terse.","cache_control":{"type":"ephemeral"}}]`), msgs(cached, asst1))
	if s1.Key != s2.Key || s1.First {
		t.Errorf("system as a string %+v and as blocks %+v: want one continued conversation", s1, s2)
	}
	for _, none := range []string{`[]`, `[{"role":"assistant","content":"hi"}]`, `not json`, ``} {
		if id := Opening(nil, []byte(none)); id != (ID{}) {
			t.Errorf("Opening(%s) = %+v, want none", none, id)
		}
	}
	body := msgs(sys, user1, asst1, user2)
	if n := testing.AllocsPerRun(100, func() { Opening(nil, body) }); n != 0 {
		t.Errorf("%v allocations per Opening, want 0", n)
	}
}

func TestNamed(t *testing.T) {
	if Named("") != (ID{}) {
		t.Error("an empty name is an identity")
	}
	x, y := Named("s-1"), Named("s-2")
	if x.Key == 0 || x.First || x == y || x != Named("s-1") {
		t.Errorf("Named: %+v %+v", x, y)
	}
	h := http.Header{}
	if FromHeaders(h) != (ID{}) {
		t.Error("no header is an identity")
	}
	h.Set("x-claude-code-session-id", "cc")
	if FromHeaders(h) != Named("cc") {
		t.Error("x-claude-code-session-id is not read")
	}
	h.Set("X-LLMRouter-Session", "mine")
	if FromHeaders(h) != Named("mine") {
		t.Error("X-LLMRouter-Session does not come first")
	}
	if n := testing.AllocsPerRun(100, func() { FromHeaders(h) }); n != 0 {
		t.Errorf("%v allocations per FromHeaders, want 0", n)
	}
}

// TestFromHeadersCodex: Codex CLI's session headers name its
// conversation: thread-id first (a sub-agent's thread is its own), then
// session-id and session_id; a wire header keeps its underscore.
func TestFromHeadersCodex(t *testing.T) {
	for _, tt := range []struct {
		name string
		raw  string // the request's header lines
		want ID
	}{
		{"thread-id", "thread-id: th\r\nsession-id: se\r\n", Named("th")},
		{"session-id", "session-id: se\r\n", Named("se")},
		{"session_id", "session_id: su\r\n", Named("su")},
		{"claude code's first", "session-id: se\r\nx-claude-code-session-id: cc\r\n", Named("cc")},
		{"opencode's", "x-session-id: ses_1\r\nx-session-affinity: ses_1\r\n", Named("ses_1")},
		{"codex's before opencode's", "x-session-affinity: oc\r\nsession-id: se\r\n", Named("se")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := http.ReadRequest(bufio.NewReader(strings.NewReader("POST /v1/responses HTTP/1.1\r\nHost: x\r\n" + tt.raw + "\r\n")))
			if err != nil {
				t.Fatal(err)
			}
			if got := FromHeaders(r.Header); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func BenchmarkOpening(b *testing.B) {
	msgs := []byte(`[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello in five words please."},{"role":"assistant","content":"Hello there, nice to meet."},{"role":"user","content":"Again, in French."}]`)
	b.ReportAllocs()
	for b.Loop() {
		Opening(nil, msgs)
	}
}

func BenchmarkGetPut(b *testing.B) {
	tb := New(0, nil)
	b.ReportAllocs()
	for b.Loop() {
		tb.Get(7, t0, time.Hour)
		tb.Put(7, a, t0, time.Hour)
	}
}

// reference is Opening read with gjson, the obvious way: the scanner must
// hash the same bytes.
func reference(system, messages []byte) ID {
	var d xxhash.Digest
	d.ResetWithSeed(seedOpening)
	content := func(c gjson.Result) {
		if !c.IsArray() {
			_, _ = d.WriteString("\x00" + c.Raw)
			return
		}
		c.ForEach(func(_, b gjson.Result) bool {
			if t := b.Get("text"); t.Exists() {
				_, _ = d.WriteString("\x00" + t.Raw)
			} else {
				_, _ = d.WriteString("\x00" + b.Get("type").Raw)
			}
			return true
		})
	}
	if len(system) > 0 {
		content(gjson.ParseBytes(system))
	}
	var found, continues bool
	gjson.ParseBytes(messages).ForEach(func(_, m gjson.Result) bool {
		if found {
			continues = true
			return false
		}
		role := m.Get("role")
		_, _ = d.WriteString("\x00" + role.Raw)
		content(m.Get("content"))
		found = role.Raw == `"user"`
		return true
	})
	if !found {
		return ID{}
	}
	return ID{Key: nonZero(d.Sum64()), First: !continues}
}

func FuzzOpening(f *testing.F) {
	for _, s := range []string{
		`[{"role":"system","content":"You are terse."},{"role":"user","content":"hi"}]`,
		`[ {"content" : [ {"type":"text","text":"a \"quoted\" b\\"}, {"type":"image","source":{"data":"x"}} ], "role" : "user" } , {"role":"assistant","content":null} ]`,
		`[{"role":"developer","content":[{"text":"x","cache_control":{"type":"ephemeral"}}]},{"role":"user","content":"[{]}"},{"role":"user"}]`,
		`[{"role":"assistant","content":"first"},{"role":"user","content":[],"name":"n"}]`,
		`[1, "s", [], {"role":"user","role":"assistant","content":{"a":[1,2,{"b":"}"}]}}]`,
		`{"role":"user"}`,
		`[]`,
	} {
		f.Add([]byte(`"system prompt"`), []byte(s))
		f.Add([]byte(nil), []byte(s))
	}
	f.Add([]byte("0 "), []byte(`[{"role":"user"}]`)) // a system value with space after it
	f.Add([]byte("\"s\"\n"), []byte(`[{"role":"user"}]`))
	f.Fuzz(func(t *testing.T, system, messages []byte) {
		got := Opening(system, messages) // never panics, whatever the input
		if !json.Valid(messages) || (len(system) > 0 && !json.Valid(system)) ||
			bytes.ContainsRune(messages, '\\') || bytes.ContainsRune(system, '\\') || bytes.TrimSpace(system) == nil && len(system) > 0 {
			return // the scanner reads validated JSON; escaped keys are gjson's to unescape
		}
		if want := reference(bytes.TrimSpace(system), messages); got != want {
			t.Errorf("Opening(%s, %s) = %+v, gjson reads %+v", system, messages, got, want)
		}
	})
}

// TestOpenings: a decoded conversation's opening is its system prompt and
// messages up to the first user turn; a later turn keeps the identity
// and is no longer First; another system prompt or first question is
// another conversation.
func TestOpenings(t *testing.T) {
	id := func(system string, msgs ...[2]string) ID {
		var o Openings
		o.Begin(system)
		for _, m := range msgs {
			if !o.Add(m[0], func(yield func(string)) { yield(m[1]) }) {
				break
			}
		}
		return o.ID()
	}
	first := id("sys", [2]string{"user", "q1"})
	later := id("sys", [2]string{"user", "q1"}, [2]string{"assistant", "a1"}, [2]string{"user", "q2"})
	if first.Key == 0 || !first.First || later.First || later.Key != first.Key {
		t.Errorf("first %+v, later %+v: want one key, First only on the opening alone", first, later)
	}
	if other := id("other", [2]string{"user", "q1"}); other.Key == first.Key {
		t.Error("another system prompt gives the same identity")
	}
	if other := id("sys", [2]string{"user", "q2"}); other.Key == first.Key {
		t.Error("another first question gives the same identity")
	}
	if none := id("sys", [2]string{"assistant", "hi"}); none.Key != 0 {
		t.Errorf("no user turn: %+v, want none", none)
	}
}
