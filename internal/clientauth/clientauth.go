package clientauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/llmrouter/llmrouter/internal/clientkeys"
)

// Config is the `auth:` block.
type Config struct {
	// APIKeysEnv names the environment variable holding the anonymous
	// client keys, comma-separated. Empty, or a variable that is unset or
	// empty, means no anonymous keys (the router logs a warning when a
	// named variable is empty); with no named keys either, client
	// authentication is off. Keys are compared in constant time and never
	// forwarded to providers.
	APIKeysEnv string `mapstructure:"api_keys_env"`
	// Keys are the named client keys: each a team, an app or an agent
	// with its own label, model allow-list, rate limits and budget
	// (docs/ARCHITECTURE.md, "Client keys and spend"). Empty (the
	// default) means none. Any named key turns client authentication on.
	Keys []KeyConfig `mapstructure:"keys"`
}

// KeyConfig is one entry of `auth.keys`: who it is, where its secret
// is, and what it may do.
type KeyConfig struct {
	// Name labels the key in metrics, logs and /admin/keys: 1 to 64
	// letters, digits, `_`, `.` or `-`; unique. Required.
	Name string `mapstructure:"name"`
	// KeyEnv names the environment variable holding the key's secret;
	// the router refuses to start when it is unset or empty. Exactly one
	// of KeyEnv and KeySHA256.
	KeyEnv string `mapstructure:"key_env"`
	// KeySHA256 is the hex SHA-256 of the key's secret, for a config that
	// must not hold or name the secret itself (`printf %s "$KEY" |
	// sha256sum`).
	KeySHA256 string `mapstructure:"key_sha256"`
	// Limits are the key's model allow-list, RPM/TPM and budget.
	clientkeys.Limits `mapstructure:",squash"`
}

// Validate reports every invalid field of the block, each naming its key
// (auth.keys[1].key_sha256). Secrets named by key_env are read later
// (Named), so that `router validate` reports them with the rest.
func (c Config) Validate() error {
	var errs []error
	seen := make(map[string]int, len(c.Keys))
	for i, k := range c.Keys {
		key := fmt.Sprintf("auth.keys[%d]", i)
		switch {
		case k.Name == "":
			errs = append(errs, fmt.Errorf("%s.name: must not be empty", key))
		case !clientkeys.NameOK(k.Name):
			errs = append(errs, fmt.Errorf("%s.name: must be 1 to 64 letters, digits, _ . or -, got %q", key, k.Name))
		default:
			if j, dup := seen[k.Name]; dup {
				errs = append(errs, fmt.Errorf("%s.name: duplicate key name %q (also auth.keys[%d])", key, k.Name, j))
			}
			seen[k.Name] = i
		}
		switch {
		case k.KeyEnv == "" && k.KeySHA256 == "":
			errs = append(errs, fmt.Errorf("%s: one of key_env and key_sha256 is required", key))
		case k.KeyEnv != "" && k.KeySHA256 != "":
			errs = append(errs, fmt.Errorf("%s: key_env and key_sha256 are exclusive, both are set", key))
		case k.KeySHA256 != "":
			if _, err := parseHash(k.KeySHA256); err != nil {
				errs = append(errs, fmt.Errorf("%s.key_sha256: %w", key, err))
			}
		}
		errs = append(errs, k.Limits.Validate(key))
	}
	return errors.Join(errs...)
}

// emptyHash is the SHA-256 of the empty string: what `printf %s "$KEY" |
// sha256sum` prints when KEY is unset.
var emptyHash = sha256.Sum256(nil)

// parseHash decodes a key_sha256; the empty string's hash is refused (no
// credential is empty, and a config holding it was written with the
// variable unset: issue 31, finding 6).
func parseHash(s string) ([sha256.Size]byte, error) {
	var h [sha256.Size]byte
	b, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != sha256.Size {
		return h, errors.New("must be 64 hexadecimal digits (the SHA-256 of the key)")
	}
	copy(h[:], b)
	if h == emptyHash {
		return h, errors.New(`is the SHA-256 of the empty string (what printf %s "$KEY" | sha256sum prints when KEY is unset)`)
	}
	return h, nil
}

// trimSecret is a configured secret without the ASCII white space around
// it (a variable read from a file ends in a newline); blank reports
// whether nothing else is left, Unicode spaces included.
func trimSecret(s string) (secret string, blank bool) {
	s = strings.Trim(s, " \t\r\n")
	return s, strings.TrimSpace(s) == ""
}

// Named is one named key as the front door checks it: its name and the
// SHA-256 of its secret.
type Named struct {
	Name string
	Hash [sha256.Size]byte
}

// Named resolves every named key's secret: key_env read through getenv
// (os.Getenv), key_sha256 decoded. The block must have passed Validate.
// The error names every key whose variable is unset or empty, and any
// two keys that share a secret.
func (c Config) Named(getenv func(string) string) ([]Named, error) {
	out := make([]Named, 0, len(c.Keys))
	var errs []error
	by := make(map[[sha256.Size]byte]int, len(c.Keys))
	for i, k := range c.Keys {
		n := Named{Name: k.Name}
		if k.KeyEnv != "" {
			secret, blank := trimSecret(getenv(k.KeyEnv))
			if blank {
				errs = append(errs, fmt.Errorf("auth.keys[%d].key_env: the variable %s is unset or empty", i, k.KeyEnv))
				continue
			}
			n.Hash = sha256.Sum256([]byte(secret))
		} else {
			h, err := parseHash(k.KeySHA256)
			if err != nil {
				errs = append(errs, fmt.Errorf("auth.keys[%d].key_sha256: %w", i, err))
				continue
			}
			n.Hash = h
		}
		if j, dup := by[n.Hash]; dup {
			errs = append(errs, fmt.Errorf("auth.keys[%d]: the same secret as auth.keys[%d]", i, j))
			continue
		}
		by[n.Hash] = i
		out = append(out, n)
	}
	return out, errors.Join(errs...)
}

// Keys are the accepted client keys: anonymous ones (auth.api_keys_env)
// and named ones (auth.keys). The zero value accepts every request:
// client authentication is off.
type Keys struct {
	anon  [][]byte
	named []Named
}

// NewKeys returns the keys: anon, each trimmed of ASCII white space
// (blank ones are dropped), and named.
func NewKeys(anon []string, named []Named) Keys {
	var keys Keys
	for _, k := range anon {
		if k, blank := trimSecret(k); !blank {
			keys.anon = append(keys.anon, []byte(k))
		}
	}
	keys.named = named
	return keys
}

// On reports whether client authentication is on: some key is
// configured.
func (keys Keys) On() bool { return len(keys.anon) > 0 || len(keys.named) > 0 }

// Allow reports whether r carries an accepted client key (Identify).
func (keys Keys) Allow(r *http.Request) bool {
	_, ok := keys.Identify(r)
	return ok
}

// Identify reports whether r carries an accepted client key, as
// Authorization: Bearer <key> (OpenAI's SDKs, Claude Code's
// ANTHROPIC_AUTH_TOKEN) or x-api-key: <key> (Anthropic's SDKs and Claude
// Code's ANTHROPIC_API_KEY) or x-goog-api-key: <key> (Google's SDKs and
// Gemini CLI), on every route, or ?key=<key> on the Gemini API's, and
// the name of the named key it is ("" for an anonymous key, or when
// authentication is off).
// Every key is compared, in constant time, whatever matched earlier; a
// named key is compared by the SHA-256 of the credential, so its secret
// need not be held.
func (keys Keys) Identify(r *http.Request) (name string, ok bool) {
	if !keys.On() {
		return "", true
	}
	creds := credentials(r)
	match := 0
	if len(keys.anon) > 0 {
		for _, got := range creds {
			if got == nil {
				continue
			}
			for _, k := range keys.anon {
				match |= subtle.ConstantTimeCompare(got, k)
			}
		}
	}
	if len(keys.named) > 0 {
		for _, got := range creds {
			if got == nil {
				continue
			}
			h := sha256.Sum256(got)
			for i := range keys.named {
				if subtle.ConstantTimeCompare(h[:], keys.named[i].Hash[:]) == 1 {
					// Which key matched takes a branch; that the
					// credential matched some key says the same.
					name, match = keys.named[i].Name, 1
				}
			}
		}
	}
	return name, match == 1
}

// credentials are the client keys r carries: its Bearer token, its
// x-api-key and x-goog-api-key headers and, on the Gemini API's routes
// (/v1beta/, /v1/models), its key query parameter (Google's SDKs and
// Gemini CLI send x-goog-api-key; REST examples use ?key=), each trimmed of the optional white space HTTP allows
// around a field value (RFC 9110 §5.6.3: spaces and tabs; nil when absent
// or empty). Unicode spaces are the credential's own: strings.TrimSpace
// made NBSP the empty credential, which matched a key configured with the
// empty string's hash (issue 31, finding 6).
func credentials(r *http.Request) [4][]byte {
	var out [4][]byte
	const prefix = "Bearer "
	if h := r.Header.Get("Authorization"); len(h) > len(prefix) && strings.EqualFold(h[:len(prefix)], prefix) {
		out[0] = credential(h[len(prefix):])
	}
	out[1] = credential(r.Header.Get("X-Api-Key"))
	out[2] = credential(r.Header.Get("X-Goog-Api-Key"))
	if strings.Contains(r.URL.RawQuery, "key=") && (strings.HasPrefix(r.URL.Path, "/v1beta/") || strings.HasPrefix(r.URL.Path, "/v1/models")) {
		out[3] = credential(r.URL.Query().Get("key"))
	}
	return out
}

// credential is s without the spaces and tabs around it; nil when that
// leaves nothing.
func credential(s string) []byte {
	if s = strings.Trim(s, " \t"); s == "" {
		return nil
	}
	return []byte(s)
}
