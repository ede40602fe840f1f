package providertest

import (
	"encoding/json"
	"reflect"
	"testing"
)

// DecodeJSON decodes b into the generic encoding/json form (maps, slices,
// float64, string, bool, nil) for a semantic comparison or a look inside.
// Invalid JSON fails tb at once.
func DecodeJSON(tb testing.TB, b []byte) any {
	tb.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		tb.Fatalf("invalid JSON %s: %v", b, err)
	}
	return v
}

// SameJSON fails tb (Errorf) when got and want do not decode to equal
// values: key order, white space and number spelling do not count. what
// names the document in the message. Invalid JSON on either side fails tb
// at once.
func SameJSON(tb testing.TB, what string, got []byte, want string) {
	tb.Helper()
	g, w := DecodeJSON(tb, got), DecodeJSON(tb, []byte(want))
	if !reflect.DeepEqual(g, w) {
		tb.Errorf("%s:\n got  %s\n want %s", what, got, compact(want))
	}
}

// compact is s without insignificant white space, for a readable
// message; s unchanged when it is not valid JSON.
func compact(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}
