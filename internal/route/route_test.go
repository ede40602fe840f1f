package route

import (
	"slices"
	"strings"
	"testing"
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
