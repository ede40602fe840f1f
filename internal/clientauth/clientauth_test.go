package clientauth

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/clientkeys"
)

func TestIdentify(t *testing.T) {
	hash := sha256.Sum256([]byte("team-b-secret"))
	cfg := Config{Keys: []KeyConfig{
		{Name: "team-a", KeyEnv: "TEAM_A"},
		{Name: "team-b", KeySHA256: hex.EncodeToString(hash[:])},
	}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	named, err := cfg.Named(func(v string) string {
		if v == "TEAM_A" {
			return " team-a-secret "
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	keys := NewKeys([]string{"anon-1", " anon-2 "}, named)
	tests := []struct {
		name, header, value string
		wantName            string
		wantOK              bool
	}{
		{"named bearer", "Authorization", "Bearer team-a-secret", "team-a", true},
		{"named x-api-key", "X-Api-Key", "team-a-secret", "team-a", true},
		{"named by hash", "Authorization", "bearer team-b-secret", "team-b", true},
		{"anonymous", "Authorization", "Bearer anon-2", "", true},
		{"anonymous x-api-key", "x-api-key", "anon-1", "", true},
		{"unknown", "Authorization", "Bearer nope", "", false},
		{"none", "", "", "", false},
		{"hash itself is no key", "Authorization", "Bearer " + hex.EncodeToString(hash[:]), "", false},
	}
	tests = append(tests, []struct {
		name, header, value string
		wantName            string
		wantOK              bool
	}{
		{"named x-goog-api-key", "X-Goog-Api-Key", "team-a-secret", "team-a", true},
		{"anonymous x-goog-api-key", "x-goog-api-key", " anon-1 ", "", true},
		{"unknown x-goog-api-key", "X-Goog-Api-Key", "nope", "", false},
	}...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
			if tt.header != "" {
				r.Header.Set(tt.header, tt.value)
			}
			name, ok := keys.Identify(r)
			if name != tt.wantName || ok != tt.wantOK {
				t.Errorf("got %q, %v; want %q, %v", name, ok, tt.wantName, tt.wantOK)
			}
		})
	}
	// ?key= is read on the Gemini API's routes only.
	for _, tc := range []struct {
		target string
		wantOK bool
	}{
		{"/v1beta/models/m:generateContent?key=anon-1", true},
		{"/v1beta/models/m:streamGenerateContent?alt=sse&key=team-a-secret", true},
		{"/v1/models/m:generateContent?key=anon-1", true},
		{"/v1beta/models?key=nope", false},
		{"/v1/chat/completions?key=anon-1", false},
		{"/v1/messages?key=anon-1", false},
	} {
		t.Run("query "+tc.target, func(t *testing.T) {
			if _, ok := keys.Identify(httptest.NewRequest("POST", tc.target, nil)); ok != tc.wantOK {
				t.Errorf("got %v, want %v", ok, tc.wantOK)
			}
		})
	}
	t.Run("off", func(t *testing.T) {
		if name, ok := (Keys{}).Identify(httptest.NewRequest("GET", "/", nil)); name != "" || !ok {
			t.Errorf("no keys: got %q, %v; want \"\", true", name, ok)
		}
	})
}

// emptyHash is what `printf %s "$KEY" | sha256sum` prints when KEY is
// unset: the SHA-256 of the empty string.
const emptyHashHex = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// TestBlankCredentials (issue 31, finding 6): a credential is trimmed of
// ASCII spaces and tabs only, so Unicode spaces (NBSP, U+3000) are not
// trimmed to the empty credential, and an empty credential is none; a key
// whose hash is the empty string's could only be reached by one. The keys
// are built as they were before Validate refused that hash, so the check
// is the front door's own.
func TestBlankCredentials(t *testing.T) {
	keys := NewKeys([]string{"anon"}, []Named{{Name: "unset", Hash: sha256.Sum256(nil)}})
	for _, tt := range []struct{ header, value string }{
		{"Authorization", "Bearer \u00a0"},
		{"Authorization", "Bearer \u3000"},
		{"Authorization", "Bearer \t "},
		{"X-Api-Key", "\u00a0"},
		{"X-Api-Key", "\u3000\u3000"},
		{"X-Api-Key", " \t"},
		{"X-Api-Key", ""},
	} {
		r := httptest.NewRequest("POST", "/v1/messages", nil)
		r.Header[tt.header] = []string{tt.value}
		if name, ok := keys.Identify(r); ok {
			t.Errorf("%s: %q: accepted as %q, want refused", tt.header, tt.value, name)
		}
	}
	r := httptest.NewRequest("POST", "/v1/messages", nil)
	r.Header.Set("X-Api-Key", "\tanon ")
	if _, ok := keys.Identify(r); !ok {
		t.Error("a key between a tab and a space: refused, want accepted")
	}
}

func TestValidateNamesTheKey(t *testing.T) {
	cfg := Config{Keys: []KeyConfig{
		{Name: "a", KeyEnv: "A", Limits: clientkeys.Limits{BudgetPeriod: "year", TPM: -1}},
		{Name: "a", KeySHA256: "zz"},
		{Name: "b c"},
		{Name: "unset", KeySHA256: emptyHashHex},
		{Name: "unset-upper", KeySHA256: " " + strings.ToUpper(emptyHashHex) + "\n"},
	}}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("got no error")
	}
	for _, want := range []string{
		"auth.keys[0].budget_period: must be day, week, month or total",
		"auth.keys[0].tpm: must not be negative",
		"auth.keys[1].name: duplicate key name \"a\"",
		"auth.keys[1].key_sha256: must be 64 hexadecimal digits",
		"auth.keys[2].name: must be 1 to 64 letters",
		"auth.keys[2]: one of key_env and key_sha256 is required",
		"auth.keys[3].key_sha256: is the SHA-256 of the empty string",
		"auth.keys[4].key_sha256: is the SHA-256 of the empty string",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestNamedSecrets(t *testing.T) {
	cfg := Config{Keys: []KeyConfig{{Name: "a", KeyEnv: "A"}, {Name: "b", KeyEnv: "B"}, {Name: "c", KeyEnv: "C"}}}
	_, err := cfg.Named(func(v string) string {
		if v == "C" {
			return "\u00a0\u3000 \t\n" // blank: Unicode spaces as well
		}
		return "same"
	})
	if err == nil || !strings.Contains(err.Error(), "auth.keys[1]: the same secret as auth.keys[0]") ||
		!strings.Contains(err.Error(), "auth.keys[2].key_env: the variable C is unset or empty") {
		t.Errorf("got %v; want the shared secret and the empty variable named", err)
	}
	if strings.Contains(err.Error(), "same") && strings.Contains(err.Error(), `"same"`) {
		t.Errorf("the error shows a secret: %v", err)
	}
}
