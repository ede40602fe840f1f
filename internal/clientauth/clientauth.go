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

// Allow reports whether r carries an accepted client key, as
// Authorization: Bearer <key> (OpenAI's SDKs, Claude Code's
// ANTHROPIC_AUTH_TOKEN) or x-api-key: <key> (Anthropic's SDKs and Claude
// Code's ANTHROPIC_API_KEY), on every route. Every key is compared, in
// constant time, whatever matched earlier.
func (keys Keys) Allow(r *http.Request) bool {
	if len(keys) == 0 {
		return true
	}
	match := 0
	for _, got := range credentials(r) {
		if got == nil {
			continue
		}
		for _, k := range keys {
			match |= subtle.ConstantTimeCompare(got, k)
		}
	}
	return match == 1
}

// credentials are the client keys r carries: its Bearer token and its
// x-api-key header (nil when absent).
func credentials(r *http.Request) [2][]byte {
	var out [2][]byte
	const prefix = "Bearer "
	if h := r.Header.Get("Authorization"); len(h) > len(prefix) && strings.EqualFold(h[:len(prefix)], prefix) {
		out[0] = []byte(strings.TrimSpace(h[len(prefix):]))
	}
	if h := r.Header.Get("X-Api-Key"); h != "" {
		out[1] = []byte(strings.TrimSpace(h))
	}
	return out
}
