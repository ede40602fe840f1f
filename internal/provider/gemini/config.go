package gemini

import (
	"fmt"

	"github.com/llmrouter/llmrouter/internal/provider"
)

// Defaults for a zero Config and an empty provider base_url.
const (
	// DefaultBaseURL is Google AI Studio's public endpoint.
	DefaultBaseURL = "https://generativelanguage.googleapis.com"
	// DefaultAPIVersion is the API version path segment. v1beta is where
	// systemInstruction, tools with parametersJsonSchema and
	// responseJsonSchema all live.
	DefaultAPIVersion = "v1beta"
)

// Config is the adapter-specific `gemini:` block of a provider entry. The
// zero value is valid and means every default.
type Config struct {
	// APIVersion is the path segment between the base URL and
	// "models/…", e.g. "v1beta" or "v1alpha". Empty means "v1beta". The
	// request translation uses v1beta fields (parametersJsonSchema,
	// responseJsonSchema); an older version may reject requests that use
	// tools or json_schema response formats.
	APIVersion string `mapstructure:"api_version"`
}

// Validate reports a value the adapter cannot use; the error names the key
// relative to the `gemini:` block.
func (c Config) Validate() error {
	if c.APIVersion == "" || validVersion(c.APIVersion) {
		return nil
	}
	return fmt.Errorf("api_version: %q is not an API version such as %q", c.APIVersion, DefaultAPIVersion)
}

// validVersion accepts a Google API version segment: "v", a digit, then
// lower-case letters and digits ("v1", "v1beta", "v1alpha2").
func validVersion(v string) bool {
	if len(v) < 2 || v[0] != 'v' || v[1] < '0' || v[1] > '9' {
		return false
	}
	for i := 2; i < len(v); i++ {
		c := v[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'z') {
			return false
		}
	}
	return true
}

// Type is the provider type gemini, with its `gemini:` block.
var Type = provider.Type{Name: "gemini", NeedsKey: true,
	NewBlock: func() any { return new(Config) },
	Build: func(p provider.Config, key string, block any) (provider.Adapter, error) {
		return New(p, key, *block.(*Config), nil)
	}}

func (c Config) apiVersion() string {
	if c.APIVersion == "" {
		return DefaultAPIVersion
	}
	return c.APIVersion
}
