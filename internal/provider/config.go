package provider

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"
)

// Config is what every provider entry in the config file has, whatever its
// type. Type-specific options live in the adapter's own Config, the entry's
// block named after its type (Type.NewBlock).
//
// Each field's `fingerprint` tag says whether what the router learned of
// the provider (its breaker, learned limits, blocks; docs/ARCHITECTURE.md,
// "Warm restart") stays true when the field changes: "-" when it does, or
// the part of the state file's fingerprint the field belongs to (a second
// element labels its value there). internal/warm/record derives the
// fingerprint from these tags, and its test refuses a field without one.
type Config struct {
	// Name identifies the provider in models' targets, logs and metrics:
	// letters, digits, '_', '.' and '-', unique among the providers.
	Name string `mapstructure:"name" fingerprint:"-"`
	// Type selects the adapter: the Name of one of the binary's Types
	// (openai, azure, anthropic, gemini, bedrock, vertex, openai_compatible, simulated).
	Type string `mapstructure:"type" fingerprint:"type"`
	// BaseURL is where the provider lives. openai and openai_compatible:
	// up to and including /v1; anthropic, gemini, azure: scheme://host
	// only. Empty means the provider's public URL (required for azure and
	// openai_compatible). The type's Build checks it (ParseBaseURL plus
	// its own rule about the path).
	BaseURL string `mapstructure:"base_url" fingerprint:"where"`
	// APIKeyEnv names the environment variable holding the key; APIKeyFile
	// names a file holding it (surrounding whitespace trimmed). At most one;
	// keys never live in the YAML. Neither means no key, which only a type
	// without NeedsKey accepts (local servers).
	APIKeyEnv  string `mapstructure:"api_key_env" fingerprint:"key_source,env"`
	APIKeyFile string `mapstructure:"api_key_file" fingerprint:"key_source,file"`
	// MaxConcurrency caps requests in flight to this provider (the
	// bulkhead). 0 means the default of 64.
	MaxConcurrency int `mapstructure:"max_concurrency" fingerprint:"-"`
	// RPM and TPM are ceilings on requests and tokens per minute; 0 means
	// learn them from the provider's headers.
	RPM int64 `mapstructure:"rpm" fingerprint:"rpm"`
	TPM int64 `mapstructure:"tpm" fingerprint:"tpm"`
	// FirstTokenTimeout bounds the wait for the first content of a stream
	// (and for response headers); past it the attempt fails over before
	// anything reached the client. 0 means 20s.
	FirstTokenTimeout time.Duration `mapstructure:"first_token_timeout" fingerprint:"-"`
	// Timeout bounds one whole attempt. 0 means 120s.
	Timeout time.Duration `mapstructure:"timeout" fingerprint:"-"`
	// Domain is the provider's failure domain: providers sharing
	// infrastructure (the same cloud, the same region) name the same one.
	// While a provider is down (open, or failing: its latest attempts
	// failed with no success since), the others of its domain rank below
	// providers of other domains in the same tier. "" means its own.
	Domain string `mapstructure:"domain" fingerprint:"-"`
	// ContinueFinalMessage says the provider's models continue a trailing
	// assistant message (vLLM, llama.cpp, Claude before 4.6), so its
	// targets may continue a stream another attempt started
	// (routing.stream.rescue, docs/ARCHITECTURE.md "Streaming"). false (the
	// default): never asked to. Not in the fingerprint: what the router
	// learned of the provider stays true.
	ContinueFinalMessage bool `mapstructure:"continue_final_message" fingerprint:"-"`

	// MaxResponseBytes bounds a whole (non-stream) answer the adapter
	// reads (ReadBody). It is limits.max_response_bytes, which the daemon
	// sets here for every provider: not a key of a provider entry. 0 means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64 `mapstructure:"-" fingerprint:"-"`
}

// Defaults for zero Config fields.
const (
	DefaultMaxConcurrency    = 64
	DefaultFirstTokenTimeout = 20 * time.Second
	DefaultTimeout           = 120 * time.Second
)

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.MaxConcurrency == 0 {
		c.MaxConcurrency = DefaultMaxConcurrency
	}
	if c.FirstTokenTimeout == 0 {
		c.FirstTokenTimeout = DefaultFirstTokenTimeout
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	return c
}

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// Validate checks the fields every type shares. It reports every problem,
// joined, each naming its key relative to the entry and the bad value.
// What Type and BaseURL may be is the type's to say (Types, Type.Build).
func (c Config) Validate() error {
	var errs []error
	switch {
	case c.Name == "":
		errs = append(errs, errors.New("name: must not be empty"))
	case !nameRE.MatchString(c.Name):
		errs = append(errs, fmt.Errorf("name: may hold only letters, digits, '_', '.', '-', got %q", c.Name))
	}
	if c.APIKeyEnv != "" && c.APIKeyFile != "" {
		errs = append(errs, fmt.Errorf("api_key_env: set api_key_env or api_key_file, not both (got %q and %q)", c.APIKeyEnv, c.APIKeyFile))
	}
	if c.MaxConcurrency < 0 {
		errs = append(errs, fmt.Errorf("max_concurrency: must not be negative, got %d", c.MaxConcurrency))
	}
	if c.RPM < 0 {
		errs = append(errs, fmt.Errorf("rpm: must not be negative, got %d", c.RPM))
	}
	if c.TPM < 0 {
		errs = append(errs, fmt.Errorf("tpm: must not be negative, got %d", c.TPM))
	}
	if c.FirstTokenTimeout < 0 {
		errs = append(errs, fmt.Errorf("first_token_timeout: must not be negative, got %s", c.FirstTokenTimeout))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout: must not be negative, got %s", c.Timeout))
	}
	return errors.Join(errs...)
}

// ResolveKey reads the API key APIKeyEnv or APIKeyFile names, without
// surrounding whitespace. required (the type's NeedsKey) makes an absent or
// empty key an error; otherwise it is "", no key. Errors name the key
// (api_key_env, api_key_file) and the variable or file.
func (c Config) ResolveKey(required bool) (string, error) {
	var key string
	switch {
	case c.APIKeyEnv != "":
		key = strings.TrimSpace(os.Getenv(c.APIKeyEnv))
		if key == "" && required {
			return "", fmt.Errorf("api_key_env: environment variable %s is unset or empty", c.APIKeyEnv)
		}
	case c.APIKeyFile != "":
		b, err := os.ReadFile(c.APIKeyFile)
		if err != nil {
			return "", fmt.Errorf("api_key_file: %w", err)
		}
		key = strings.TrimSpace(string(b))
		if key == "" && required {
			return "", fmt.Errorf("api_key_file: %s is empty", c.APIKeyFile)
		}
	case required:
		return "", fmt.Errorf("api_key_env: type %s needs an API key: set api_key_env or api_key_file", c.Type)
	}
	return key, nil
}

// Under puts every problem err holds under key: "base_url: …" becomes
// "providers[0].base_url: …". err may join several problems (errors.Join,
// nested or not); each is put under key and the result joins them again,
// one problem per line. Each problem stays in the chain (errors.Is, As).
// nil stays nil.
func Under(key string, err error) error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var errs []error
		for _, e := range j.Unwrap() {
			errs = append(errs, Under(key, e))
		}
		return errors.Join(errs...)
	}
	return fmt.Errorf("%s.%w", key, err)
}
