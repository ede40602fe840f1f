package route

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNewTableSortsByTierStably(t *testing.T) {
	tab, err := NewTable([]ModelConfig{{Name: "m", Targets: []Target{
		{Provider: "local", Model: "l", Tier: 2},
		{Provider: "a", Model: "x", Tier: 0},
		{Provider: "c", Model: "z", Tier: 1},
		{Provider: "b", Model: "y", Tier: 0},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	m := tab.Lookup("m")
	var got []string
	for _, tg := range m.Targets {
		got = append(got, tg.Provider)
	}
	if s := strings.Join(got, ","); s != "a,b,c,local" {
		t.Errorf("order = %s, want a,b,c,local", s)
	}
	if m.BestTier != 0 {
		t.Errorf("BestTier = %d, want 0", m.BestTier)
	}
	if tab.Lookup("nope") != nil {
		t.Error("Lookup of unknown model is not nil")
	}
}

func TestValidate(t *testing.T) {
	provs := map[string]bool{"a": true}
	tests := []struct {
		m    ModelConfig
		want string
	}{
		{ModelConfig{Name: "m", Targets: []Target{{Provider: "a", Model: "x"}}}, ""},
		{ModelConfig{Targets: []Target{{Provider: "a", Model: "x"}}}, "name:"},
		{ModelConfig{Name: "m"}, "targets:"},
		{ModelConfig{Name: "m", Targets: []Target{{Provider: "b", Model: "x"}}}, `targets[0].provider: no provider named "b"`},
		{ModelConfig{Name: "m", Targets: []Target{{Provider: "a"}}}, "targets[0].model"},
		{ModelConfig{Name: "m", Targets: []Target{{Provider: "a", Model: "x", Tier: -1}}}, "targets[0].tier"},
		{ModelConfig{Name: "m", Targets: []Target{{Provider: "a", Model: "x"}, {Provider: "a", Model: "x"}}}, "targets[1]: duplicate"},
		{ModelConfig{Name: "m", Targets: []Target{{Provider: "a", Model: "x", MaxOutputTokens: 16384}}}, ""},
		{ModelConfig{Name: "m", Targets: []Target{{Provider: "a", Model: "x", MaxOutputTokens: -1}}}, "targets[0].max_output_tokens: must not be negative, got -1"},
		{ModelConfig{Name: "m", Targets: []Target{{Provider: "a", Model: "x"}, {Provider: "a", Model: "x", MaxOutputTokens: 8192}}}, "targets[1]: duplicate target a/x tier 0"},
		{ModelConfig{Name: "m", Targets: []Target{{Provider: "a", Model: "x", ContextWindow: 128000, FirstTokenTimeout: time.Minute}}}, ""},
		{ModelConfig{Name: "m", Targets: []Target{{Provider: "a", Model: "x", ContextWindow: -1}}}, "targets[0].context_window: must not be negative, got -1"},
		{ModelConfig{Name: "m", Targets: []Target{{Provider: "a", Model: "x", FirstTokenTimeout: -time.Second}}}, "targets[0].first_token_timeout: must not be negative, got -1s"},
		{ModelConfig{Name: "m", Targets: []Target{{Provider: "a", Model: "x"}, {Provider: "a", Model: "x", ContextWindow: 8192}}}, "targets[1]: duplicate target a/x tier 0"},
	}
	for _, tt := range tests {
		err := tt.m.Validate(provs)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%+v: unexpected error %v", tt.m, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: got error %v, want one containing %q", tt.m, err, tt.want)
		}
	}
}

// TestValidateReportsEveryProblem: one call names every fault of an entry.
func TestValidateReportsEveryProblem(t *testing.T) {
	m := ModelConfig{Targets: []Target{
		{Provider: "b", Model: "", Tier: -1},
		{Provider: "", Model: "x"},
		{Provider: "", Model: "x"},
	}}
	got := strings.Split(m.Validate(map[string]bool{"a": true}).Error(), "\n")
	want := []string{
		"name: must not be empty",
		`targets[0].provider: no provider named "b"`,
		"targets[0].model: must not be empty",
		"targets[0].tier: must not be negative, got -1",
		"targets[1].provider: must not be empty",
		"targets[2].provider: must not be empty",
		"targets[2]: duplicate target /x tier 0",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestDuplicateModel(t *testing.T) {
	_, err := NewTable([]ModelConfig{{Name: "m"}, {Name: "m"}})
	if err == nil || !strings.Contains(err.Error(), "models[1].name") {
		t.Errorf("got %v, want duplicate error naming models[1].name", err)
	}
}

func TestLookupPatterns(t *testing.T) {
	target := []Target{{Provider: "a", Model: "x"}}
	tab, err := NewTable([]ModelConfig{
		{Name: "claude-*", Targets: target},
		{Name: "claude-opus-*", Targets: target},
		{Name: "claude-opus-4-1", Targets: target},
		{Name: "gpt-4o", Targets: target},
		{Name: "gpt-*", Targets: target},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		desc, name string
		want       string // the Name of the model found; "" = nil
	}{
		{"exact name", "claude-opus-4-1", "claude-opus-4-1"},
		{"exact wins over a pattern", "gpt-4o", "gpt-4o"},
		{"longer pattern wins", "claude-opus-5-5", "claude-opus-*"},
		{"shorter pattern", "claude-haiku-4-5", "claude-*"},
		{"the prefix alone", "claude-", "claude-*"},
		{"a pattern's own name", "claude-*", "claude-*"},
		{"pattern of another family", "gpt-5", "gpt-*"},
		{"prefix without its dash", "claude", ""},
		{"case matters", "Claude-opus-4-1", ""},
		{"no match", "llama3.2", ""},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			got := ""
			if m := tab.Lookup(tt.name); m != nil {
				got = m.Name
			}
			if got != tt.want {
				t.Errorf("Lookup(%q) = %q, want %q", tt.name, got, tt.want)
			}
		})
	}
	if got, want := tab.Names(), []string{"claude-*", "claude-opus-*", "claude-opus-4-1", "gpt-*", "gpt-4o"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %q, want %q", got, want)
	}
}

// TestLookupCatchAll: a lone "*" serves every name nothing else does.
func TestLookupCatchAll(t *testing.T) {
	target := []Target{{Provider: "a", Model: "x"}}
	tab, err := NewTable([]ModelConfig{{Name: "*", Targets: target}, {Name: "m", Targets: target}, {Name: "c*", Targets: target}})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"m": "m", "claude": "c*", "anything": "*", "": "*"} {
		if m := tab.Lookup(name); m == nil || m.Name != want {
			t.Errorf("Lookup(%q) = %v, want %q", name, m, want)
		}
	}
}

func TestValidatePatternNames(t *testing.T) {
	provs := map[string]bool{"a": true}
	tests := []struct {
		name string
		want string // "" = valid
	}{
		{"claude-*", ""},
		{"*", ""},
		{"gpt-4o", ""},
		{"*-mini", "name: `*` may only end a pattern, got \"*-mini\""},
		{"claude-*-opus", "name: `*` may only end a pattern"},
		{"claude-**", "name: `*` may only end a pattern"},
		{"**", "name: `*` may only end a pattern"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ModelConfig{Name: tt.name, Targets: []Target{{Provider: "a", Model: "x"}}}.Validate(provs)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got error %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// BenchmarkLookup: an exact name costs one map hit whether or not the
// table has patterns; only a miss scans them.
func BenchmarkLookup(b *testing.B) {
	target := []Target{{Provider: "a", Model: "x"}}
	var exact, withPatterns []ModelConfig
	for i := range 20 {
		exact = append(exact, ModelConfig{Name: fmt.Sprintf("model-%02d", i), Targets: target})
	}
	withPatterns = append(slices.Clone(exact),
		ModelConfig{Name: "claude-*", Targets: target},
		ModelConfig{Name: "claude-opus-*", Targets: target},
		ModelConfig{Name: "gpt-*", Targets: target},
		ModelConfig{Name: "gemini-2.5-*", Targets: target},
	)
	run := func(name string, models []ModelConfig, lookup string) {
		tab, err := NewTable(models)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if tab.Lookup(lookup) == nil {
					b.Fatal("not found")
				}
			}
		})
	}
	run("exact/no-patterns", exact, "model-07")
	run("exact/with-patterns", withPatterns, "model-07")
	run("pattern/longest", withPatterns, "claude-opus-5-5")
	run("pattern/shortest", withPatterns, "claude-haiku-4-5")
}

// TestWithKnown: unset windows and output caps come from the table, set
// ones stay, unknown models stay unknown, and the models given are not
// modified.
func TestWithKnown(t *testing.T) {
	in := []ModelConfig{{Name: "m", Targets: []Target{{Provider: "a", Model: "known"},
		{Provider: "a", Model: "known", ContextWindow: 5, MaxOutputTokens: 7}, {Provider: "a", Model: "unknown"}}}}
	out := WithKnown(in, func(m string) (int64, int64) {
		if m == "unknown" {
			return 0, 0
		}
		return 100, 10
	})
	var windows, caps []int64
	for _, tg := range out[0].Targets {
		windows, caps = append(windows, tg.ContextWindow), append(caps, tg.MaxOutputTokens)
	}
	if !slices.Equal(windows, []int64{100, 5, 0}) || !slices.Equal(caps, []int64{10, 7, 0}) {
		t.Errorf("windows %v and caps %v, want [100 5 0] and [10 7 0]", windows, caps)
	}
	if in[0].Targets[0].ContextWindow != 0 || in[0].Targets[0].MaxOutputTokens != 0 {
		t.Error("WithKnown modified its input")
	}
}
