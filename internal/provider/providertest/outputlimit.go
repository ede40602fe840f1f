package providertest

import (
	"strings"
	"testing"
)

// OutputLimit is one row of the table every adapter's outgoing body is
// held to when a target caps the answer's length (route.Target's
// MaxOutputTokens, docs/ARCHITECTURE.md, "Output limits").
type OutputLimit struct {
	Name string
	// Limit is the output limit the client's request sets; 0: none.
	Limit int64
	// Cap is the target's max_output_tokens (the request's
	// MaxOutputTokens); 0: none.
	Cap int64
	// Want is the limit the provider must receive; 0: none. An adapter
	// that sends a default of its own when the client sets none checks
	// that row on its own.
	Want int64
}

// OutputLimits is the table: a limit above the cap is sent as the cap;
// one at or under it, and none, as they came; without a cap, as it came.
var OutputLimits = []OutputLimit{
	{Name: "above the cap", Limit: 64000, Cap: 16384, Want: 16384},
	{Name: "at the cap", Limit: 16384, Cap: 16384, Want: 16384},
	{Name: "under the cap", Limit: 1000, Cap: 16384, Want: 1000},
	{Name: "no limit", Limit: 0, Cap: 16384, Want: 0},
	{Name: "no cap", Limit: 64000, Cap: 0, Want: 64000},
}

// NumberAt is the number at path in the JSON document b (object keys
// joined by '.': "generationConfig.maxOutputTokens") and whether one is
// there (a null or a missing key is not). Invalid JSON fails tb at once.
func NumberAt(tb testing.TB, b []byte, path string) (int64, bool) {
	tb.Helper()
	v := DecodeJSON(tb, b)
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return 0, false
		}
		if v, ok = m[k]; !ok {
			return 0, false
		}
	}
	n, ok := v.(float64)
	return int64(n), ok
}

// CheckLimit fails tb (Errorf) when the body b does not carry want (0:
// nothing) at path; what names the case.
func CheckLimit(tb testing.TB, what string, b []byte, path string, want int64) {
	tb.Helper()
	got, ok := NumberAt(tb, b, path)
	switch {
	case want == 0 && ok:
		tb.Errorf("%s: %s = %d, want none\n%s", what, path, got, b)
	case want != 0 && (!ok || got != want):
		tb.Errorf("%s: %s = %d (present %v), want %d\n%s", what, path, got, ok, want, b)
	}
}
