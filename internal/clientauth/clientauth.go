package clientauth

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// Config is the `auth:` block.
type Config struct {
	// APIKeysEnv names the environment variable holding the client keys,
	// comma-separated. Empty, or a variable that is unset or empty, means
	// no client authentication (the router logs a warning when a named
	// variable is empty). Keys are compared in constant time and never
	// forwarded to providers.
	APIKeysEnv string `mapstructure:"api_keys_env"`
}

// Keys are the accepted client keys; none (nil) means client
// authentication is off.
type Keys [][]byte

// NewKeys returns the keys ks, each trimmed of spaces; empty ones are
// dropped.
func NewKeys(ks []string) Keys {
	var keys Keys
	for _, k := range ks {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, []byte(k))
		}
	}
	return keys
}

// Allow reports whether r carries an accepted client key. Every key is
// compared, in constant time, whatever matched earlier.
func (keys Keys) Allow(r *http.Request) bool {
	if len(keys) == 0 {
		return true
	}
	h := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return false
	}
	got := []byte(strings.TrimSpace(h[len(prefix):]))
	ok := 0
	for _, k := range keys {
		ok |= subtle.ConstantTimeCompare(got, k)
	}
	return ok == 1
}
