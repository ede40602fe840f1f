package config

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"

	"github.com/llmrouter/llmrouter/configs"
	"github.com/llmrouter/llmrouter/internal/backoff"
	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/anthropic"
	"github.com/llmrouter/llmrouter/internal/provider/gemini"
	"github.com/llmrouter/llmrouter/internal/provider/openai"
	"github.com/llmrouter/llmrouter/internal/provider/simulated"
	"github.com/llmrouter/llmrouter/internal/proxy"
	"github.com/llmrouter/llmrouter/internal/route"
)

// EnvPrefix prefixes environment overrides: LLMROUTER_LISTEN,
// LLMROUTER_LIMITS_REQUEST_TIMEOUT, ...
const EnvPrefix = "LLMROUTER"

// Config is the whole file.
type Config struct {
	// Listen is the API listener's address. Default 127.0.0.1:8080
	// (a sidecar listens on localhost).
	Listen string `mapstructure:"listen"`
	// AdminListen serves /metrics, /healthz, /readyz and /admin/*.
	// Default 127.0.0.1:9090.
	AdminListen string `mapstructure:"admin_listen"`
	// Auth is client authentication.
	Auth proxy.AuthConfig `mapstructure:"auth"`
	// Limits bound every request.
	Limits proxy.LimitsConfig `mapstructure:"limits"`
	// ShutdownTimeout is how long in-flight requests and streams may
	// finish after SIGTERM. Default 30s; 0 means do not wait.
	ShutdownTimeout time.Duration `mapstructure:"shutdown_timeout"`
	// StateFile is where learned limits and stats survive restarts: saved
	// atomically every 30s and at shutdown, loaded at start (a missing or
	// corrupt file is a warning and a fresh start). "" means off.
	StateFile string `mapstructure:"state_file"`
	// Log configures the process log.
	Log Log `mapstructure:"log"`
	// Pprof serves Go's profiler at /debug/pprof/ on the admin listener.
	// Default false: in Kubernetes the admin port is reachable from the
	// cluster, and a profile costs CPU; turn it on to investigate.
	Pprof bool `mapstructure:"pprof"`
	// Providers is the list of upstreams.
	Providers []Provider `mapstructure:"providers"`
	// Models is what clients may ask for.
	Models []route.ModelConfig `mapstructure:"models"`
	// Routing is the selection and retry policy.
	Routing Routing `mapstructure:"routing"`
	// Breaker configures every provider's circuit breaker.
	Breaker breaker.Config `mapstructure:"breaker"`
}

// Routing is the `routing:` block.
type Routing struct {
	// ScoreWeights weigh success rate, latency and recency in a
	// provider's score. Default 0.6 / 0.2 / 0.2.
	ScoreWeights route.Weights `mapstructure:"score_weights"`
	// Retry bounds attempts and the backoff between retries of the same
	// provider.
	Retry backoff.Config `mapstructure:"retry"`
	// AdaptiveThrottleK is K in client-side adaptive throttling: a
	// provider is sent about K times what it accepts over two minutes.
	// Default 2.0; 0 disables; otherwise >= 1.
	AdaptiveThrottleK float64 `mapstructure:"adaptive_throttle_k"`
	// ShedOpenFraction: when more than this share of providers have open
	// breakers, low priority is refused and normal priority queues.
	// Range (0, 1]; 1 never sheds. Default 0.5.
	ShedOpenFraction float64 `mapstructure:"shed_open_fraction"`
}

// Log is the `log:` block.
type Log struct {
	// Level is debug, info, warn or error. Default info.
	Level string `mapstructure:"level"`
	// Format is json (default) or text.
	Format string `mapstructure:"format"`
}

// Provider is one entry of `providers:`: the common fields plus the block
// of its type, if any (for example `simulated:` for type simulated).
type Provider struct {
	provider.Config `mapstructure:",squash"`
	// Simulated configures a provider of type simulated.
	Simulated *simulated.Config `mapstructure:"simulated"`
	// Azure configures a provider of type azure (api_version).
	Azure *openai.Config `mapstructure:"azure"`
	// Gemini configures a provider of type gemini (api_version).
	Gemini *gemini.Config `mapstructure:"gemini"`
	// Anthropic configures a provider of type anthropic (version,
	// default_max_tokens).
	Anthropic *anthropic.Config `mapstructure:"anthropic"`
}

// Types lists the provider types.
var Types = []string{"openai", "azure", "anthropic", "gemini", "openai_compatible", "simulated"}

// Load reads the config: the embedded default when path is "", else the
// file at path over the default's scalar keys; then the environment.
func Load(path string) (*Config, error) {
	base := viper.New()
	base.SetConfigType("yaml")
	if err := base.ReadConfig(bytes.NewReader(configs.Default)); err != nil {
		return nil, fmt.Errorf("reading embedded default config: %w", err)
	}
	settings := base.AllSettings()
	v := viper.New()
	v.SetConfigType("yaml")
	if path != "" {
		delete(settings, "providers")
		delete(settings, "models")
	}
	if err := v.MergeConfigMap(settings); err != nil {
		return nil, fmt.Errorf("loading embedded default config: %w", err)
	}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading config: %w", err)
		}
		switch ext := strings.ToLower(filepath.Ext(path)); ext {
		case ".json":
			v.SetConfigType("json")
		case ".yaml", ".yml", "":
		default:
			return nil, fmt.Errorf("reading config %s: unsupported extension %q (use .yaml, .yml or .json)", path, ext)
		}
		if err := v.MergeConfig(bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("parsing config %s: %w", path, err)
		}
	}
	v.SetEnvPrefix(EnvPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()

	var c Config
	err := v.UnmarshalExact(&c, viper.DecodeHook(mapstructure.ComposeDecodeHookFunc(
		mapstructure.StringToTimeDurationHookFunc(),
	)))
	if err != nil {
		return nil, decodeError(err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

var invalidKeys = regexp.MustCompile(`'([^']*)' has invalid keys: (.*)`)

// decodeError rewrites mapstructure's errors so each names its full key.
func decodeError(err error) error {
	var msgs []string
	for _, line := range strings.Split(err.Error(), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "*"))
		if line == "" || strings.HasPrefix(line, "decoding failed") {
			continue
		}
		if m := invalidKeys.FindStringSubmatch(line); m != nil {
			for _, k := range strings.Split(m[2], ", ") {
				key := k
				if m[1] != "" {
					key = m[1] + "." + k
				}
				msgs = append(msgs, "unknown key "+key)
			}
			continue
		}
		msgs = append(msgs, line)
	}
	if len(msgs) == 0 {
		return fmt.Errorf("config: %w", err)
	}
	return errors.New("config: " + strings.Join(msgs, "; "))
}

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// Validate checks the whole config. The error names the key and the value.
func (c *Config) Validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(checkAddr("listen", c.Listen))
	add(checkAddr("admin_listen", c.AdminListen))
	if c.Listen != "" && c.Listen == c.AdminListen && !strings.HasSuffix(c.Listen, ":0") {
		add(fmt.Errorf("admin_listen: must differ from listen, both are %q", c.Listen))
	}
	add(c.Limits.Validate())
	add(c.Routing.Retry.Validate())
	add(c.Routing.ScoreWeights.Validate())
	if k := c.Routing.AdaptiveThrottleK; k != 0 && !(k >= 1 && k < 1e6) {
		add(fmt.Errorf("routing.adaptive_throttle_k: must be 0 (off) or at least 1, got %g", k))
	}
	if f := c.Routing.ShedOpenFraction; !(f > 0 && f <= 1) {
		add(fmt.Errorf("routing.shed_open_fraction: must be in (0, 1], got %g", f))
	}
	if err := c.Breaker.Validate(); err != nil {
		add(err)
	}
	if c.ShutdownTimeout < 0 {
		add(fmt.Errorf("shutdown_timeout: must not be negative, got %s", c.ShutdownTimeout))
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		add(fmt.Errorf("log.level: must be debug, info, warn or error, got %q", c.Log.Level))
	}
	switch c.Log.Format {
	case "json", "text":
	default:
		add(fmt.Errorf("log.format: must be json or text, got %q", c.Log.Format))
	}
	if len(c.Providers) == 0 {
		add(errors.New("providers: at least one provider is required"))
	}
	names := make(map[string]bool, len(c.Providers))
	for i := range c.Providers {
		p := &c.Providers[i]
		key := fmt.Sprintf("providers[%d]", i)
		if err := p.validate(); err != nil {
			add(fmt.Errorf("%s.%w", key, err))
		}
		if names[p.Name] {
			add(fmt.Errorf("%s.name: duplicate provider name %q", key, p.Name))
		}
		names[p.Name] = true
	}
	if len(c.Models) == 0 {
		add(errors.New("models: at least one model is required"))
	}
	models := make(map[string]bool, len(c.Models))
	for i, m := range c.Models {
		add(provider.Under(fmt.Sprintf("models[%d]", i), m.Validate(names)))
		if models[m.Name] {
			add(fmt.Errorf("models[%d].name: duplicate model %q", i, m.Name))
		}
		models[m.Name] = true
	}
	return errors.Join(errs...)
}

func checkAddr(key, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s: must be host:port, got %q", key, addr)
	}
	_ = host
	if port == "" {
		return fmt.Errorf("%s: missing port in %q", key, addr)
	}
	return nil
}

func (p *Provider) validate() error {
	switch {
	case p.Name == "":
		return errors.New("name: must not be empty")
	case !nameRE.MatchString(p.Name):
		return fmt.Errorf("name: %q may hold only letters, digits, '_', '.', '-'", p.Name)
	case p.APIKeyEnv != "" && p.APIKeyFile != "":
		return errors.New("api_key_env: set api_key_env or api_key_file, not both")
	case p.MaxConcurrency < 0:
		return fmt.Errorf("max_concurrency: must not be negative, got %d", p.MaxConcurrency)
	case p.RPM < 0:
		return fmt.Errorf("rpm: must not be negative, got %d", p.RPM)
	case p.TPM < 0:
		return fmt.Errorf("tpm: must not be negative, got %d", p.TPM)
	case p.FirstTokenTimeout < 0:
		return fmt.Errorf("first_token_timeout: must not be negative, got %s", p.FirstTokenTimeout)
	case p.Timeout < 0:
		return fmt.Errorf("timeout: must not be negative, got %s", p.Timeout)
	}
	if p.BaseURL != "" {
		if _, err := provider.ParseBaseURL(p.BaseURL, ""); err != nil {
			return err
		}
	}
	blocks := map[string]bool{
		"simulated": p.Simulated != nil,
		"azure":     p.Azure != nil,
		"gemini":    p.Gemini != nil,
		"anthropic": p.Anthropic != nil,
	}
	for typ, set := range blocks {
		if set && typ != p.Type {
			return fmt.Errorf("%s: block given for a provider of type %q", typ, p.Type)
		}
	}
	var blockErr error
	switch p.Type {
	case "simulated":
		if p.Simulated != nil {
			blockErr = p.Simulated.Validate()
		}
	case "azure":
		if p.BaseURL == "" {
			return fmt.Errorf("base_url: required for type %s", p.Type)
		}
		if p.Azure != nil {
			blockErr = p.Azure.Validate()
		}
	case "gemini":
		if p.Gemini != nil {
			blockErr = p.Gemini.Validate()
		}
	case "openai_compatible":
		if p.BaseURL == "" {
			return fmt.Errorf("base_url: required for type %s", p.Type)
		}
	case "anthropic":
		if p.Anthropic != nil {
			blockErr = p.Anthropic.Validate()
		}
	case "openai":
	default:
		return fmt.Errorf("type: must be one of %s, got %q", strings.Join(Types, ", "), p.Type)
	}
	if blockErr != nil {
		return fmt.Errorf("%s.%w", p.Type, blockErr)
	}
	return nil
}

// NeedsKey reports whether the provider's type requires an API key.
func (p *Provider) NeedsKey() bool {
	switch p.Type {
	case "openai", "azure", "anthropic", "gemini":
		return true
	}
	return false
}

// ResolveKey reads the provider's API key from api_key_env or api_key_file.
// A type that needs a key and has none is an error naming the key.
func (p *Provider) ResolveKey() (string, error) {
	var key string
	switch {
	case p.APIKeyEnv != "":
		key = strings.TrimSpace(os.Getenv(p.APIKeyEnv))
		if key == "" && p.NeedsKey() {
			return "", fmt.Errorf("api_key_env: environment variable %s is empty", p.APIKeyEnv)
		}
	case p.APIKeyFile != "":
		b, err := os.ReadFile(p.APIKeyFile)
		if err != nil {
			return "", fmt.Errorf("api_key_file: %w", err)
		}
		key = strings.TrimSpace(string(b))
		if key == "" && p.NeedsKey() {
			return "", fmt.Errorf("api_key_file: %s is empty", p.APIKeyFile)
		}
	case p.NeedsKey():
		return "", fmt.Errorf("api_key_env: type %s needs an API key: set api_key_env or api_key_file", p.Type)
	}
	return key, nil
}

// ClientKeys returns the client API keys named by auth.api_keys_env, and
// whether the variable was named but empty (auth off; worth a warning).
func (c *Config) ClientKeys() (keys []string, namedButEmpty bool) {
	if c.Auth.APIKeysEnv == "" {
		return nil, false
	}
	for _, k := range strings.Split(os.Getenv(c.Auth.APIKeysEnv), ",") {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	return keys, len(keys) == 0
}
