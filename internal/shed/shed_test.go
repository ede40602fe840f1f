package shed

import (
	"context"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParsePriority(t *testing.T) {
	for in, want := range map[string]Priority{"": Normal, " HIGH ": High, "low": Low, "Normal": Normal} {
		if got, ok := ParsePriority(in); !ok || got != want {
			t.Errorf("ParsePriority(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if _, ok := ParsePriority("urgent"); ok {
		t.Error(`ParsePriority("urgent") accepted`)
	}
}

func TestAdmit(t *testing.T) {
	g := New()
	ctx := context.Background()
	if rel, ok := g.Admit(ctx, Low, false); !ok || rel != nil {
		t.Error("not shedding: low refused or holding a slot")
	}
	if _, ok := g.Admit(ctx, Low, true); ok {
		t.Error("shedding: low admitted")
	}
	if rel, ok := g.Admit(ctx, High, true); !ok || rel != nil {
		t.Error("shedding: high refused or holding a slot")
	}
	var rels []func()
	for range Slots {
		rel, ok := g.Admit(ctx, Normal, true)
		if !ok || rel == nil {
			t.Fatal("shedding: normal refused while slots are free")
		}
		rels = append(rels, rel)
	}
	// Every slot taken: a normal request waits, and is refused when its
	// context ends first.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, ok := g.Admit(cctx, Normal, true); ok {
		t.Error("normal admitted with every slot taken")
	}
	rels[0]()
	if rel, ok := g.Admit(ctx, Normal, true); !ok || rel == nil {
		t.Error("normal refused after a slot was freed")
	}
}
