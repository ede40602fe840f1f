package layout

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/llmrouter/llmrouter/"

// layers place the packages that sit above the mechanisms
// (docs/ARCHITECTURE.md, "Packages"); every other package of the module
// is a mechanism or a leaf, layer 0. Imports point down or sideways: a
// package imports none of a higher layer.
var layers = map[string]int{
	"internal/config":          1, // the schema: composed from the mechanisms' own Config types
	"internal/answer":          2, // the one answer writer
	"internal/failover":        2, // the attempt loop
	"internal/routing":         3, // the routing state in force
	"internal/warm":            3, // the state file's document, of the routing state
	"internal/proxy":           4, // the front door and its dialects
	"internal/proxy/proxytest": 4, // the front doors' benchmark harness (tests only)
	"internal/messages/api":    4,
	"internal/gemini/api":      4,
	"internal/responses/api":   4,
	"internal/admin":           4,
	"internal/daemon":          5, // the running router
	"cmd/router":               6,
}

// below is what a package of each layer may import: config sits beside
// the upper layers but may import only mechanisms, so that every package
// that owns a setting sits under the schema, and no setting reaches the
// schema from above.
func mayImport(from, to string) bool {
	lf, lt := layers[from], layers[to]
	if from == "internal/config" {
		return lt == 0
	}
	return lt <= lf
}

// longestChain bounds the longest import chain inside the module (the
// import drawing's height). 11 since internal/sockio, a leaf that imports
// nothing of the module, sits under internal/h1 (the raw socket reads and
// writes both HTTP/1.1 ends share: docs/ARCHITECTURE.md, "Socket reads
// and writes"); the chain above it is unchanged.
const longestChain = 11

type pkg struct {
	ImportPath string
	Imports    []string
}

func packages(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	pkgs := map[string][]string{}
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		name, ok := strings.CutPrefix(p.ImportPath, module)
		if !ok || strings.HasPrefix(name, "test/") || strings.HasPrefix(name, "bench") {
			continue
		}
		var in []string
		for _, imp := range p.Imports {
			if n, ok := strings.CutPrefix(imp, module); ok {
				in = append(in, n)
			}
		}
		pkgs[name] = in
	}
	return pkgs
}

// TestImportsPointDown: no mechanism or leaf imports the front door, the
// attempt loop, the routing state or the daemon; config imports only
// mechanisms; and the longest chain stays within its bound.
func TestImportsPointDown(t *testing.T) {
	pkgs := packages(t)
	for _, from := range slices.Sorted(maps.Keys(pkgs)) {
		for _, to := range pkgs[from] {
			if !mayImport(from, to) {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports point down", from, layers[from], to, layers[to])
			}
		}
	}
	chain := longest(pkgs)
	t.Logf("longest import chain: %d packages: %s", len(chain), strings.Join(chain, " → "))
	if len(chain) > longestChain {
		t.Errorf("the longest import chain is %d packages, more than %d: %s", len(chain), longestChain, strings.Join(chain, " → "))
	}
}

// longest is the longest import chain, from the importer down.
func longest(pkgs map[string][]string) []string {
	memo := map[string][]string{}
	var walk func(p string) []string
	walk = func(p string) []string {
		if c, ok := memo[p]; ok {
			return c
		}
		memo[p] = []string{p} // a cycle cannot compile; this only guards the walk
		var best []string
		for _, q := range pkgs[p] {
			if c := walk(q); len(c) > len(best) {
				best = c
			}
		}
		memo[p] = append([]string{p}, best...)
		return memo[p]
	}
	var best []string
	for _, p := range slices.Sorted(maps.Keys(pkgs)) {
		if c := walk(p); len(c) > len(best) {
			best = c
		}
	}
	return best
}

// TestLayersName: every package the layers name exists, so that a move
// cannot silently drop a rule.
func TestLayersName(t *testing.T) {
	pkgs := packages(t)
	for p := range layers {
		if _, ok := pkgs[p]; !ok {
			t.Errorf("layers names %s, which is no package of the module", p)
		}
	}
}

// maxClosure bounds what some packages may depend on, all told: the body
// reader is read by every front door and must stay small (9: its
// provider.Op brings internal/provider, and with it internal/h1 and the
// leaf internal/sockio under it).
var maxClosure = map[string]int{"internal/intake": 9}

// TestClosures: the packages maxClosure names depend on no more packages
// of the module than it allows.
func TestClosures(t *testing.T) {
	pkgs := packages(t)
	for p, limit := range maxClosure {
		seen := map[string]bool{}
		var walk func(string)
		walk = func(q string) {
			for _, r := range pkgs[q] {
				if !seen[r] {
					seen[r] = true
					walk(r)
				}
			}
		}
		walk(p)
		if len(seen) > limit {
			t.Errorf("%s depends on %d packages of the module, more than %d: %s", p, len(seen), limit,
				strings.Join(slices.Sorted(maps.Keys(seen)), " "))
		}
	}
}

// maxLines bounds a non-test Go file: past it, a file holds more than one
// thing to read at once, and is split where its parts are.
const maxLines = 800

// TestFileLength: no non-test Go file of the module is longer than
// maxLines.
func TestFileLength(t *testing.T) {
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != "../.." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if n := bytes.Count(b, []byte("\n")); n > maxLines {
			t.Errorf("%s has %d lines, more than %d: split it where its parts are", strings.TrimPrefix(path, "../../"), n, maxLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
