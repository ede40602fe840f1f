package provider

import "testing"

// TestFinishes is the clean-end rule's step table: after each step, whether
// a clean end of the body would end a whole answer.
func TestFinishes(t *testing.T) {
	type step struct {
		saw, finish int // -2: no such call
		whole       bool
	}
	saw := func(i int, whole bool) step { return step{saw: i, finish: -2, whole: whole} }
	fin := func(i int, whole bool) step { return step{saw: -2, finish: i, whole: whole} }
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"nothing seen", nil},
		{"one choice finishes", []step{saw(0, false), saw(0, false), fin(0, true), saw(0, true)}},
		{"a finish without content", []step{fin(0, true)}},
		{"two choices, one finished", []step{saw(0, false), saw(1, false), fin(0, false), saw(1, false)}},
		{"two choices, both finished", []step{saw(0, false), saw(1, false), fin(1, false), fin(0, true), fin(0, true)}},
		{"a choice seen after the others finished", []step{fin(0, true), saw(2, false), fin(2, true)}},
		{"an index out of range", []step{fin(0, true), saw(MaxChoices, false), fin(MaxChoices, false), fin(-1, false)}},
		{"the last index in range", []step{saw(MaxChoices-1, false), fin(MaxChoices-1, true)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f Finishes
			if f.Whole() {
				t.Fatal("the zero value is whole, want nothing seen")
			}
			for i, s := range tc.steps {
				if s.saw != -2 {
					f.Saw(s.saw)
				}
				if s.finish != -2 {
					f.Finish(s.finish)
				}
				if got := f.Whole(); got != s.whole {
					t.Errorf("step %d (%+v): whole %v, want %v", i, s, got, s.whole)
				}
			}
		})
	}
}
