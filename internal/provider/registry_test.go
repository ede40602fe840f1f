package provider

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

type nopAdapter struct{}

func (nopAdapter) Do(context.Context, *Request) (*Response, error) { return nil, nil }
func (nopAdapter) Supports(Op) bool                                { return true }

type testBlock struct{ Version string }

// recordingType is a Type whose Build records what it was given and fails
// with buildErr.
func recordingType(needsKey bool, buildErr error, gotKey *string, gotBlock *any) Type {
	return Type{Name: "t", NeedsKey: needsKey,
		NewBlock: func() any { return new(testBlock) },
		Build: func(_ Config, key string, block any) (Adapter, error) {
			*gotKey, *gotBlock = key, block
			if buildErr != nil {
				return nil, buildErr
			}
			return nopAdapter{}, nil
		}}
}

func TestTypeNewAdapter(t *testing.T) {
	t.Setenv("TEST_REGISTRY_KEY", "sk")
	tests := []struct {
		name      string
		env       string
		needsKey  bool
		block     any
		buildErr  error
		wantKey   string // what Build got
		wantBlock any
		wantErr   string // "" means an adapter
	}{
		{"key resolved", "TEST_REGISTRY_KEY", true, &testBlock{"v"}, nil, "sk", &testBlock{"v"}, ""},
		{"nil block is zero", "TEST_REGISTRY_KEY", true, nil, nil, "sk", &testBlock{}, ""},
		{"no key, optional", "", false, nil, nil, "", &testBlock{}, ""},
		{"unset key still builds", "TEST_REGISTRY_UNSET", true, nil, errors.New("base_url: bad"), standInKey, &testBlock{},
			"api_key_env: environment variable TEST_REGISTRY_UNSET is unset or empty\nbase_url: bad"},
		{"build error", "TEST_REGISTRY_KEY", true, nil, errors.Join(errors.New("a: 1"), errors.New("b: 2")), "sk", &testBlock{}, "a: 1\nb: 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotKey string
			var gotBlock any
			typ := recordingType(tt.needsKey, tt.buildErr, &gotKey, &gotBlock)
			a, key, err := typ.NewAdapter(Config{Name: "p", Type: "t", APIKeyEnv: tt.env}, tt.block)
			if gotKey != tt.wantKey || *gotBlock.(*testBlock) != *tt.wantBlock.(*testBlock) {
				t.Errorf("Build got key %q block %+v, want %q %+v", gotKey, gotBlock, tt.wantKey, tt.wantBlock)
			}
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr || a != nil || key != "" {
					t.Errorf("got %v, %q, %v; want no adapter and error %q", a, key, err, tt.wantErr)
				}
				return
			}
			if err != nil || a == nil || key != tt.wantKey {
				t.Errorf("got %v, %q, %v; want an adapter and key %q", a, key, err, tt.wantKey)
			}
		})
	}
}

func TestTypesLookup(t *testing.T) {
	ts := Types{{Name: "a"}, {Name: "b", NeedsKey: true}}
	if got, ok := ts.Lookup("b"); !ok || !got.NeedsKey {
		t.Errorf("Lookup(b) = %+v, %v; want b, true", got, ok)
	}
	if _, ok := ts.Lookup("c"); ok {
		t.Error("Lookup(c) ok, want not found")
	}
	if got := ts.Names(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Names() = %q, want [a b]", got)
	}
	if got := strings.Join(Types(nil).Names(), ","); got != "" {
		t.Errorf("nil Types: Names() = %q, want none", got)
	}
}
