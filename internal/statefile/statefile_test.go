package statefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type doc struct {
	A int               `json:"a"`
	M map[string]string `json:"m"`
}

func TestSaveLoadRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state.json")
	in := doc{A: 7, M: map[string]string{"x": "y"}}
	if err := Save(p, in); err != nil {
		t.Fatal(err)
	}
	in.A = 8
	if err := Save(p, in); err != nil { // replaces
		t.Fatal(err)
	}
	var out doc
	if err := Load(p, &out); err != nil || out.A != 8 || out.M["x"] != "y" {
		t.Fatalf("got %+v, %v", out, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Errorf("left %d files behind, want only the state file", len(entries))
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	var out doc
	if err := Load(filepath.Join(dir, "missing.json"), &out); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"a": 1,`), 0o600)
	if err := Load(bad, &out); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("corrupt: %v", err)
	}
}

func TestSaveIntoMissingDirFails(t *testing.T) {
	if err := Save(filepath.Join(t.TempDir(), "no", "such", "dir", "s.json"), doc{}); err == nil {
		t.Error("saved into a missing directory")
	}
}
