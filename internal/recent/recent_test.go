package recent

import (
	"strings"
	"testing"
	"time"
)

// TestRing: the ring keeps the last n records in order, with their
// attempts, and Since reads what came after a sequence number.
func TestRing(t *testing.T) {
	r := New(3)
	for i := 1; i <= 5; i++ {
		q := Request{ID: string(rune('a' + i - 1)), Status: 200}
		for j := 0; j < i; j++ {
			q.AddAttempt("p", "ok")
		}
		r.Add(&q)
	}
	got, last := r.Since(0, 0, nil)
	if last != 5 || len(got) != 3 || got[0].ID != "c" || got[2].ID != "e" || got[0].Seq != 3 {
		t.Fatalf("Since(0): last %d, %+v", last, got)
	}
	if got[2].N != 5 || len(got[2].Attempts) != MaxAttempts {
		t.Errorf("a request of 5 attempts: N %d, %d kept", got[2].N, len(got[2].Attempts))
	}
	if more, last2 := r.Since(last, 0, nil); len(more) != 0 || last2 != 5 {
		t.Errorf("Since(last): %v %d", more, last2)
	}
	if one, _ := r.Since(4, 0, nil); len(one) != 1 || one[0].ID != "e" {
		t.Errorf("Since(4): %+v", one)
	}
	if two, last := r.Since(0, 2, nil); len(two) != 2 || two[0].ID != "d" || last != 5 {
		t.Errorf("Since(0, 2): %+v, last %d", two, last)
	}
}

// TestTexts: the client's model name and a failure's message are copied
// into the record, cut at a character's start; the caller's strings are
// not kept.
func TestTexts(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
		set            func(*Request, string)
		get            func(Request) string
	}{
		{"asked short", "gpt-4o", "gpt-4o", (*Request).SetAsked, func(q Request) string { return q.Asked }},
		{"asked long", strings.Repeat("m", 100), strings.Repeat("m", MaxAsked), (*Request).SetAsked, func(q Request) string { return q.Asked }},
		{"asked cut before a character", strings.Repeat("m", MaxAsked-1) + "é", strings.Repeat("m", MaxAsked-1), (*Request).SetAsked,
			func(q Request) string { return q.Asked }},
		{"error", "<img src=x onerror=alert(1)>", "<img src=x onerror=alert(1)>", (*Request).SetError, func(q Request) string { return q.Error }},
		{"error long", strings.Repeat("e", 1000), strings.Repeat("e", MaxError), (*Request).SetError, func(q Request) string { return q.Error }},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := New(2)
			in := []byte(c.in)
			var q Request
			c.set(&q, string(in))
			r.Add(&q)
			got, _ := r.Since(0, 0, nil)
			if g := c.get(got[0]); g != c.want {
				t.Errorf("got %q, want %q", g, c.want)
			}
		})
	}
}

// TestWatch: Add wakes a waiting watcher, every one of them; without
// one waiting it touches no channel.
func TestWatch(t *testing.T) {
	r := New(4)
	r.Add(&Request{ID: "x"})
	if r.wake != nil {
		t.Error("Add made a wake channel with nobody watching")
	}
	next, stop := r.Watch()
	next2, stop2 := r.Watch()
	ch, ch2 := next(), next2()
	r.Add(&Request{ID: "y"})
	for _, c := range []<-chan struct{}{ch, ch2} {
		select {
		case <-c:
		case <-time.After(time.Second):
			t.Fatal("a watcher was not woken")
		}
	}
	if r.wake != nil {
		t.Error("the wake channel was kept after it was closed")
	}
	r.Add(&Request{ID: "z"}) // nobody waits: nothing to close
	if r.Watchers() != 2 {
		t.Errorf("watchers %d, want 2", r.Watchers())
	}
	stop()
	stop()
	stop2()
	if r.Watchers() != 0 {
		t.Errorf("watchers %d after stop", r.Watchers())
	}
}

// TestNil: a nil ring keeps nothing and does not panic.
func TestNil(t *testing.T) {
	var r *Ring
	r.Add(&Request{ID: "x"})
	if got, last := r.Since(0, 0, nil); len(got) != 0 || last != 0 {
		t.Errorf("nil ring: %v %d", got, last)
	}
}

// BenchmarkAdd: what a request costs the ring (nobody watching).
func BenchmarkAdd(b *testing.B) {
	r := New(512)
	q := Request{ID: "req_1", Model: "m", Provider: "p", Status: 200}
	q.AddAttempt("p", "ok")
	q.SetAsked("m")
	b.ReportAllocs()
	for b.Loop() {
		r.Add(&q)
	}
}

// BenchmarkAddWatched: what a request costs the ring while a watcher
// waits for it and reads what came (as the status page's event stream
// does, coalescing).
func BenchmarkAddWatched(b *testing.B) {
	r := New(512)
	q := Request{ID: "req_1", Model: "m", Provider: "p", Status: 200}
	q.AddAttempt("p", "ok")
	next, stop := r.Watch()
	done := make(chan struct{})
	go func() {
		var seq uint64
		var buf []Request
		for {
			select {
			case <-done:
				return
			case <-next():
			}
			buf, seq = r.Since(seq, 0, buf[:0])
		}
	}()
	b.ReportAllocs()
	for b.Loop() {
		r.Add(&q)
	}
	close(done)
	stop()
}
