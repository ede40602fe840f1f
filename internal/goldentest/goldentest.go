// Package goldentest compares a test's output with a golden file under
// the package's testdata, and rewrites the file when the test binary runs
// with -update (go test ./internal/x -run Golden -update; read the diff
// before committing it). The golden files hold what the walkers read
// from their inputs (docs/ARCHITECTURE.md, "Packages").
package goldentest

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the code's output")

// Check compares got with testdata/name, or writes it there under
// -update. A difference names its first line.
func Check(t testing.TB, name, got string) {
	t.Helper()
	path := "testdata/" + name
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		g, w := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(g), len(w)) {
			if g[i] != w[i] {
				t.Fatalf("%s line %d:\ngot  %s\nwant %s\n(run with -update to rewrite it, and read the diff)", path, i+1, g[i], w[i])
			}
		}
		t.Fatalf("%s: got %d lines, want %d (run with -update to rewrite it)", path, len(g), len(w))
	}
}
