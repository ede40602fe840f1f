package provider

import (
	"strconv"
	"sync"
	"testing"
	"unsafe"
)

// view is s as bytes the test may overwrite, and the string viewing them,
// as an adapter reads a name out of an answer's buffer.
func view(s string) ([]byte, string) {
	b := []byte(s)
	return b, unsafe.String(unsafe.SliceData(b), len(b))
}

func TestModelNames(t *testing.T) {
	var names ModelNames
	for _, c := range []struct {
		name, reported, target, want string
	}{
		{"none reported", "", "gpt-4o-mini", ""},
		{"the target", "gpt-4o-mini", "gpt-4o-mini", "gpt-4o-mini"},
		{"a snapshot of the target", "gpt-4o-mini-2024-07-18", "gpt-4o-mini", "gpt-4o-mini-2024-07-18"},
		{"the same snapshot again", "gpt-4o-mini-2024-07-18", "gpt-4o-mini", "gpt-4o-mini-2024-07-18"},
		{"no target", "claude-sonnet-4-5-20250929", "", "claude-sonnet-4-5-20250929"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, v := view(c.reported)
			got := names.Name(v, c.target)
			clear(b) // the answer's buffer is reused
			if got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// TestModelNamesNoAllocation: the target's own string is returned as it
// is, and a name seen before is the table's copy; neither allocates.
func TestModelNamesNoAllocation(t *testing.T) {
	var names ModelNames
	target := "gpt-4o-mini"
	_, same := view(target)
	if got := names.Name(same, target); unsafe.StringData(got) != unsafe.StringData(target) {
		t.Error("the target's name is not the target's string")
	}
	_, snap := view("gpt-4o-mini-2024-07-18")
	first := names.Name(snap, target)
	if unsafe.StringData(first) == unsafe.StringData(snap) {
		t.Fatal("the name views the answer's bytes")
	}
	if got := names.Name(snap, target); unsafe.StringData(got) != unsafe.StringData(first) {
		t.Error("a name seen before is copied again")
	}
	if n := testing.AllocsPerRun(100, func() {
		names.Name(same, target)
		names.Name(snap, target)
	}); n != 0 {
		t.Errorf("got %v allocations per call, want 0", n)
	}
}

// TestModelNamesBounded: past maxModelNames names, or for a name longer
// than maxModelNameLen, the table grows no more; the name is still right.
func TestModelNamesBounded(t *testing.T) {
	var names ModelNames
	for i := range maxModelNames {
		names.Name("model-"+strconv.Itoa(i), "")
	}
	long := string(make([]byte, maxModelNameLen+1))
	for _, name := range []string{"one-too-many", long} {
		_, v := view(name)
		if got := names.Name(v, ""); got != name {
			t.Errorf("got %q, want %q", got, name)
		}
		if n := len(*names.names.Load()); n != maxModelNames {
			t.Errorf("table holds %d names, want %d", n, maxModelNames)
		}
		if n := testing.AllocsPerRun(10, func() { names.Name(v, "") }); n != 1 {
			t.Errorf("got %v allocations per call past the bound, want 1", n)
		}
	}
	if got := names.Name("model-7", ""); got != "model-7" {
		t.Errorf("got %q, want model-7", got)
	}
}

// TestModelNamesConcurrent: adapters serve requests at once; run with
// -race.
func TestModelNamesConcurrent(t *testing.T) {
	var names ModelNames
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				want := "model-" + strconv.Itoa((g+i)%(maxModelNames+8))
				if got := names.Name(want, "model-0"); got != want {
					t.Errorf("got %q, want %q", got, want)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := len(*names.names.Load()); n != maxModelNames {
		t.Errorf("table holds %d names, want %d", n, maxModelNames)
	}
}

// BenchmarkModelNames is a steady reported name that is not the target's,
// looked up from every core at once.
func BenchmarkModelNames(b *testing.B) {
	var names ModelNames
	_, v := view("gpt-4o-mini-2024-07-18")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			names.Name(v, "gpt-4o-mini")
		}
	})
}
