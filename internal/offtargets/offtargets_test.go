package offtargets

import (
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestSet(t *testing.T) {
	var s Set
	if s.Off("a") || s.Len() != 0 || s.Messages(strings.ToUpper) != nil {
		t.Fatal("the zero Set has a target off")
	}
	if !s.Disable("b", "no such model b") || !s.Disable("a", "no such model a") {
		t.Fatal("Disable of an enabled target reported it off already")
	}
	if s.Disable("a", "again") {
		t.Error("Disable of a disabled target reported it was on")
	}
	if !s.Off("a") || !s.Off("b") || s.Off("c") || s.Len() != 2 {
		t.Errorf("Off a/b/c = %v/%v/%v, Len %d; want true/true/false, 2", s.Off("a"), s.Off("b"), s.Off("c"), s.Len())
	}
	if got := s.Models(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Models = %v", got)
	}
	if got := s.Messages(strings.ToUpper); got["a"] != "NO SUCH MODEL A" || len(got) != 2 {
		t.Errorf("Messages = %v (the first message stays)", got)
	}
	if got := s.Lift(); !slices.Equal(got, []string{"a", "b"}) || s.Len() != 0 || s.Off("a") {
		t.Errorf("Lift = %v, then Len %d", got, s.Len())
	}
	s.Add(map[string]string{"x": "1", "y": "2"}, func(m string) bool { return m == "x" })
	if !s.Off("x") || s.Off("y") || s.Len() != 1 {
		t.Error("Add kept a model its filter refused, or lost one it kept")
	}
	s.Replace(map[string]string{"z": "3"})
	if s.Off("x") || !s.Off("z") || s.Len() != 1 {
		t.Error("Replace did not make the set a copy of its argument")
	}
	s.Replace(nil)
	if s.Len() != 0 || s.Off("z") {
		t.Error("Replace(nil) left targets off")
	}
}

func TestSetConcurrent(t *testing.T) {
	var s Set
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := string(rune('a' + i))
			for range 100 {
				s.Disable(m, "gone")
				s.Off(m)
				s.Models()
				if i == 0 {
					s.Lift()
				}
			}
		}()
	}
	wg.Wait()
	if s.Len() != len(s.Models()) {
		t.Errorf("Len %d, Models %v", s.Len(), s.Models())
	}
}
