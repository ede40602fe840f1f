package record

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/quota"
	"github.com/llmrouter/llmrouter/internal/ratelimit"
	"github.com/llmrouter/llmrouter/internal/stats"
	"github.com/llmrouter/llmrouter/internal/throttle"
)

// State is what a provider's runtime keeps across restarts
// (docs/ARCHITECTURE.md, "Warm restart"), JSON-serialisable. Instants are
// wall-clock: a monotonic reading means nothing to another process.
//
// Version 1 of the state file held Stats, RequestsLimit and TokensLimit
// only; every other field is nil or zero in a State read from it.
type State struct {
	// Stats are the windowed success rate and latencies.
	Stats stats.Persisted `json:"stats"`
	// RequestsLimit and TokensLimit are the limits in force (0 unknown).
	// Version 2 keeps them for a reader of version 1; Limits supersedes
	// them.
	RequestsLimit int64 `json:"requests_limit,omitempty"`
	TokensLimit   int64 `json:"tokens_limit,omitempty"`

	// Fingerprint identifies the configuration the state was learned
	// under; Restore takes nothing from a State whose Fingerprint differs
	// from the provider's today. nil in a version-1 State.
	Fingerprint *Fingerprint `json:"fingerprint,omitempty"`
	// Breaker, Limits and Throttle are the mechanisms' own states.
	Breaker  *breaker.Persisted   `json:"breaker,omitempty"`
	Limits   *ratelimit.Persisted `json:"limits,omitempty"`
	Throttle *throttle.Persisted  `json:"throttle,omitempty"`
	// Quota is the out-of-quota block; nil when the provider was not off.
	Quota *quota.Persisted `json:"quota,omitempty"`
	// DisabledTargets are the models that answered "model not found",
	// each with the provider's message (secrets redacted).
	DisabledTargets map[string]string `json:"disabled_targets,omitempty"`
	// LastErrorKind is the kind of the last failure that counted; "" none.
	LastErrorKind string `json:"last_error_kind,omitempty"`
	// ClosedAt is when the breaker last closed after a trip, while the
	// slow-start ramp that followed was still under way; zero otherwise.
	ClosedAt time.Time `json:"closed_at,omitzero"`
}

// Fingerprint is what a provider's learned state depends on: where it is
// (type and base_url, with the region or location a cloud type's block
// names: provider.Endpointer), which account it is (where its key comes from:
// api_key_env or api_key_file, never the key), the ceilings its buckets
// count against (rpm, tpm) and the policy its breaker and quota block
// follow (the breaker: block). Timeouts, concurrency, the failure domain
// and adaptive throttling do not change what the provider told the
// router, so they are not in it; nor does a new key read from the same
// place (a rotated key does not clear a breaker opened for auth: the probe
// decides, as after a reload). base_url, the key source and the policy
// are kept as hashes: a URL may carry credentials, and the file needs
// only to tell them apart.
type Fingerprint struct {
	Type      string `json:"type"`
	BaseURL   string `json:"base_url"`
	KeySource string `json:"key_source"`
	RPM       int64  `json:"rpm"`
	TPM       int64  `json:"tpm"`
	Breaker   string `json:"breaker"`
}

// FingerprintOf is the Fingerprint of the provider configured as p, at
// endpoint (what its type's block says about where it goes:
// provider.EndpointOf; "" when base_url says it all, which keeps the
// fingerprint of such a provider what it always was), whose breaker and
// quota block follow b and quotaRecheck (defaults applied: the same policy
// written out or left to its defaults is one fingerprint). The endpoint
// counts as part of base_url.
func FingerprintOf(p provider.Config, endpoint string, b breaker.Config, quotaRecheck time.Duration) Fingerprint {
	parts := fingerprintParts(p)
	where := parts["where"]
	if endpoint != "" {
		where += " " + endpoint
	}
	return Fingerprint{
		Type:      parts["type"],
		BaseURL:   digest(where),
		KeySource: digest(parts["key_source"]),
		RPM:       p.RPM,
		TPM:       p.TPM,
		Breaker:   digest(policyString(b) + " quota_recheck=" + quotaRecheck.String()),
	}
}

// fingerprintGroups are provider.Config's fields by the part of the
// fingerprint their `fingerprint` tag names, in declaration order, with
// the label their value takes there: read from the type once, so that a
// field added to the config takes part when its tag says so, and its test
// refuses a field without a tag.
var fingerprintGroups = func() map[string][]labeled {
	groups := map[string][]labeled{}
	t := reflect.TypeFor[provider.Config]()
	for i := range t.NumField() {
		tag := t.Field(i).Tag.Get("fingerprint")
		if tag == "" || tag == "-" {
			continue
		}
		group, label, _ := strings.Cut(tag, ",")
		groups[group] = append(groups[group], labeled{index: i, label: label})
	}
	return groups
}()

// labeled is one field of a fingerprint group.
type labeled struct {
	index int
	label string
}

// fingerprintParts is each group's values: label=value of its fields,
// joined by spaces (a field without a label is its value alone).
func fingerprintParts(p provider.Config) map[string]string {
	v := reflect.ValueOf(p)
	out := make(map[string]string, len(fingerprintGroups))
	for group, fields := range fingerprintGroups {
		var b strings.Builder
		for i, f := range fields {
			if i > 0 {
				b.WriteByte(' ')
			}
			if f.label != "" {
				b.WriteString(f.label + "=")
			}
			fmt.Fprint(&b, v.Field(f.index).Interface())
		}
		out[group] = b.String()
	}
	return out
}

// policyString writes every leaf of the breaker's policy as name=value,
// its mapstructure name and its value (%d, %g, a duration's String), in
// declaration order: a field added to breaker.Config changes the
// fingerprint without being listed here.
func policyString(b breaker.Config) string {
	var parts []string
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		t := v.Type()
		for i := range t.NumField() {
			f, fv := t.Field(i), v.Field(i)
			if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[time.Duration]() {
				walk(fv)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
			switch x := fv.Interface().(type) {
			case time.Duration:
				parts = append(parts, name+"="+x.String())
			case float64:
				parts = append(parts, fmt.Sprintf("%s=%g", name, x))
			default:
				parts = append(parts, fmt.Sprintf("%s=%v", name, x))
			}
		}
	}
	walk(reflect.ValueOf(b))
	return strings.Join(parts, " ")
}

// Key names the shared state of the provider called name and configured
// as f (docs/ARCHITECTURE.md, "Fleet"): processes share a provider's
// state only when they agree on what it is, so a corrected base_url
// starts with a clean slate instead of the old breaker, while settings
// that stay each process's own (max_concurrency, timeouts, domain,
// throttling) may differ. It never includes a secret.
func (f Fingerprint) Key(name string) string {
	return digest(fmt.Sprintf("%q %q %q %q %d %d %q", name, f.Type, f.BaseURL, f.KeySource, f.RPM, f.TPM, f.Breaker))[len("sha256:"):]
}

// digest is a short hash of s: enough to tell two settings apart.
func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:8])
}

// Changed names the keys on which f and g differ: type, base_url,
// api_key_env/api_key_file, rpm, tpm, breaker.
func (f Fingerprint) Changed(g Fingerprint) []string {
	var keys []string
	for _, c := range []struct {
		key  string
		diff bool
	}{
		{"type", f.Type != g.Type}, {"base_url", f.BaseURL != g.BaseURL}, {"api_key_env/api_key_file", f.KeySource != g.KeySource},
		{"rpm", f.RPM != g.RPM}, {"tpm", f.TPM != g.TPM}, {"breaker", f.Breaker != g.Breaker},
	} {
		if c.diff {
			keys = append(keys, c.key)
		}
	}
	return keys
}
