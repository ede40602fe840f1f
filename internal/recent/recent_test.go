package recent

import (
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
	got, last := r.Since(0, nil)
	if last != 5 || len(got) != 3 || got[0].ID != "c" || got[2].ID != "e" || got[0].Seq != 3 {
		t.Fatalf("Since(0): last %d, %+v", last, got)
	}
	if got[2].N != 5 || len(got[2].Attempts) != MaxAttempts {
		t.Errorf("a request of 5 attempts: N %d, %d kept", got[2].N, len(got[2].Attempts))
	}
	if more, last2 := r.Since(last, nil); len(more) != 0 || last2 != 5 {
		t.Errorf("Since(last): %v %d", more, last2)
	}
	if one, _ := r.Since(4, nil); len(one) != 1 || one[0].ID != "e" {
		t.Errorf("Since(4): %+v", one)
	}
}

// TestWatch: Add wakes a watcher; without one it touches no channel.
func TestWatch(t *testing.T) {
	r := New(4)
	before := r.wake
	r.Add(&Request{ID: "x"})
	if r.wake != before {
		t.Error("Add replaced the wake channel with nobody watching")
	}
	next, stop := r.Watch()
	ch := next()
	r.Add(&Request{ID: "y"})
	select {
	case <-ch:
	case <-time.After(time.Second):
		t.Fatal("a watcher was not woken")
	}
	stop()
	stop()
	if r.subs.Load() != 0 {
		t.Errorf("watchers %d after stop", r.subs.Load())
	}
}

// BenchmarkAdd: what a request costs the ring (nobody watching).
func BenchmarkAdd(b *testing.B) {
	r := New(512)
	q := Request{ID: "req_1", Model: "m", Provider: "p", Status: 200}
	q.AddAttempt("p", "ok")
	b.ReportAllocs()
	for b.Loop() {
		r.Add(&q)
	}
}
