package messages

import (
	"net/http"
	"strconv"
	"strings"
)

// CheckBetas checks a request's anthropic-beta header, its values joined
// with commas: each comma-separated element, trimmed of spaces and tabs,
// is empty (ignored) or a beta's name, ^[a-z0-9-]+$ (every real one is).
// A provider quotes a value it does not know back in its error
// ("Unexpected value(s) `x` for the `anthropic-beta` header"), and no
// client's words may reach the router's reading of a provider's errors
// (docs/ARCHITECTURE.md, "Classification"); the refusal names the header
// and the element's position, not its text.
func CheckBetas(v string) *Error {
	for i, n := 0, 1; i <= len(v); n++ {
		j := strings.IndexByte(v[i:], ',')
		if j < 0 {
			j = len(v) - i
		}
		if !betaName(strings.Trim(v[i:i+j], " \t")) {
			return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error",
				Message: "anthropic-beta: value " + strconv.Itoa(n) + " is not a beta's name (each comma-separated value must match ^[a-z0-9-]+$)"}
		}
		i += j + 1
	}
	return nil
}

// betaName reports whether s is empty or made of a-z, 0-9 and '-'.
func betaName(s string) bool {
	for i := range len(s) {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}
