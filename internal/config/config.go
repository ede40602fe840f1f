package config

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"

	"github.com/llmrouter/llmrouter/configs"
	"github.com/llmrouter/llmrouter/internal/breaker"
	"github.com/llmrouter/llmrouter/internal/clientauth"
	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/policy"
	"github.com/llmrouter/llmrouter/internal/pricing"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/redisconn"
	"github.com/llmrouter/llmrouter/internal/responses/store"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/tracing"
	"github.com/llmrouter/llmrouter/internal/upstream/shared"
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
	// AdminTokenEnv names the variable holding the admin listener's token
	// (docs/ARCHITECTURE.md, "Admin listener"): with it, everything there
	// but /healthz, /readyz and /metrics requires the token; "" (the
	// default) leaves those pages open to a loopback Host only. A named
	// variable that is unset or blank refuses to start.
	AdminTokenEnv string `mapstructure:"admin_token_env"`
	// Auth is client authentication.
	Auth clientauth.Config `mapstructure:"auth"`
	// Limits bound every request.
	Limits limits.Config `mapstructure:"limits"`
	// ShutdownTimeout is how long in-flight requests and streams may
	// finish after SIGTERM. Default 30s; 0 means do not wait.
	ShutdownTimeout time.Duration `mapstructure:"shutdown_timeout"`
	// StateFile is where learned limits and stats survive restarts: saved
	// atomically every 30s and at shutdown, loaded at start (a missing or
	// corrupt file is a warning and a fresh start). "" means off.
	StateFile string `mapstructure:"state_file"`
	// SharedState shares every provider's state across a fleet of
	// routers through Redis; off while its redis_url is "".
	SharedState redisconn.Config `mapstructure:"shared_state"`
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
	Breaker Breaker `mapstructure:"breaker"`
	// Responses bounds the responses kept for the Responses API's
	// GET /v1/responses/{id}, previous_response_id and item_reference.
	Responses store.Config `mapstructure:"responses"`
	// Pricing overrides the embedded list prices, per provider and model
	// or per model; empty (the default) keeps them.
	Pricing []pricing.Entry `mapstructure:"pricing"`
	// Tracing exports OpenTelemetry spans of every request and attempt;
	// off while its otlp_endpoint is "".
	Tracing tracing.Config `mapstructure:"tracing"`

	unknownEnv []string // see UnknownEnv
}

// Breaker is the `breaker:` block: the circuit breaker's settings and,
// beside them, how often a provider out of quota is checked (quota has its
// own block in the provider's runtime: the breaker's probe cannot tell
// whether quota is back).
type Breaker struct {
	breaker.Config `mapstructure:",squash"`
	// QuotaRecheck is how often a provider out of quota gets one real
	// request to check whether it is back. Default 1h; at least 1s.
	QuotaRecheck time.Duration `mapstructure:"quota_recheck"`
}

// Routing is the `routing:` block: the routing policy the attempt loop
// follows whole (policy.Config), and beside it what every provider's
// runtime shares.
type Routing struct {
	policy.Config `mapstructure:",squash"`
	// AdaptiveThrottleK is K in client-side adaptive throttling: a
	// provider is sent about K times what it accepts over two minutes.
	// Default 2.0; 0 disables; otherwise >= 1.
	AdaptiveThrottleK float64 `mapstructure:"adaptive_throttle_k"`
}

// Log is the `log:` block.
type Log struct {
	// Level is debug, info, warn or error. Default info.
	Level string `mapstructure:"level"`
	// Format is json (default) or text.
	Format string `mapstructure:"format"`
}

// Provider is one entry of `providers:`: the fields every type shares,
// and the entry's other keys. Which other key an entry may have depends on
// its type, and the types are the binary's to name, so Load keeps them
// undecoded; ResolveTypes decodes the block of the entry's type (`azure:`
// under type azure) and rejects the rest.
type Provider struct {
	provider.Config `mapstructure:",squash"`
	// Blocks holds the entry's keys that are not common fields, as decoded
	// YAML: its type's block, or mistakes. Nil when there are none.
	Blocks map[string]any `mapstructure:",remain"`
}

// Load reads the config (Check) and returns it only when it has no
// problem at all; otherwise the error joins every problem, one per line.
// A provider entry's type and block are checked later, by ResolveTypes.
func Load(path string) (*Config, error) {
	c, err := Check(path)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Check reads the config: the embedded default when path is "", else the
// file at path over the default's scalar keys; then the environment. It
// decodes strictly and validates, and reports every problem at once: the
// error joins them, one per line, each naming its key and its bad value.
// The Config is returned with the error so that a checker can go on to
// the provider types (router validate); a key that did not decode holds
// its zero value. The Config is nil only when the file could not be read
// or parsed at all.
func Check(path string) (*Config, error) {
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
	problems, failed := decodeProblems("", reflect.TypeFor[Config](), v.UnmarshalExact(&c, func(dc *mapstructure.DecoderConfig) {
		dc.DecodeHook = durationHook
	}))
	// A key that did not decode holds its zero value; what Validate says
	// about that zero would only repeat the problem, wrongly.
	for _, err := range leaves(c.Validate()) {
		if !failed[keyOf(err)] {
			problems = append(problems, err)
		}
	}
	c.unknownEnv = unknownEnv(v.AllKeys(), &c)
	return &c, errors.Join(problems...)
}

// durationHook decodes durations from Go duration strings ("30s"). A bare
// number other than 0 is an error: YAML `timeout: 30` would otherwise be
// 30 nanoseconds.
func durationHook(from, to reflect.Type, data any) (any, error) {
	if to != reflect.TypeFor[time.Duration]() {
		return data, nil
	}
	switch from.Kind() {
	case reflect.String:
		d, err := time.ParseDuration(strings.TrimSpace(data.(string)))
		if err != nil {
			return nil, fmt.Errorf("must be a duration such as 30s or 250ms, got %q", data)
		}
		return d, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		if reflect.ValueOf(data).IsZero() {
			return time.Duration(0), nil
		}
		return nil, fmt.Errorf("must be a duration with a unit such as 30s or 250ms, got %v", data)
	}
	return data, nil
}

// decodeProblems turns mapstructure's error tree into one problem per key,
// each naming its full key (prefix, then the decoder's name) and its bad
// value, and returns the set of keys that failed. root is the type of
// what was decoded (a pointer's element is used). err may be nil.
func decodeProblems(prefix string, root reflect.Type, err error) (problems []error, failed map[string]bool) {
	if root != nil && root.Kind() == reflect.Pointer {
		root = root.Elem()
	}
	failed = map[string]bool{}
	full := func(name string) string {
		switch {
		case prefix == "":
			return name
		case name == "":
			return prefix
		}
		return prefix + "." + name
	}
	for _, leaf := range leaves(err) {
		var de *mapstructure.DecodeError
		if !errors.As(leaf, &de) {
			problems = append(problems, leaf)
			continue
		}
		key, inner := full(de.Name()), de.Unwrap()
		if rest, ok := strings.CutPrefix(inner.Error(), "has invalid keys: "); ok {
			name := de.Name()
			if root != nil && name == root.String() {
				// mapstructure (since v2.5) names the decoded value's Go
				// type for keys at the top of what it decodes.
				name = ""
			}
			for _, k := range strings.Split(rest, ", ") {
				problems = append(problems, fmt.Errorf("unknown key %s", full(joinKey(name, k))))
			}
			continue
		}
		failed[key] = true
		var pe *mapstructure.ParseError
		var ue *mapstructure.UnconvertibleTypeError
		switch {
		case errors.As(inner, &pe):
			problems = append(problems, fmt.Errorf("%s: must be %s, got %s", key, kindWords(pe.Expected.Type()), show(pe.Value)))
		case errors.As(inner, &ue):
			problems = append(problems, fmt.Errorf("%s: must be %s, got %s", key, kindWords(ue.Expected.Type()), show(ue.Value)))
		default:
			problems = append(problems, fmt.Errorf("%s: %w", key, inner))
		}
	}
	return problems, failed
}

func joinKey(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

// kindWords says what a value of type t looks like in YAML.
func kindWords(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number, not negative"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping of keys to values"
	}
	return "a " + t.String()
}

// show formats a bad value for a message: strings quoted, the rest as Go
// prints them.
func show(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// leaves returns the problems err holds: the leaves of its errors.Join
// tree (mapstructure's too), in order. nil has none.
func leaves(err error) []error {
	if err == nil {
		return nil
	}
	var out []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, leaves(e)...)
		}
		return out
	}
	// mapstructure wraps its joined errors in one line of text.
	if inner := errors.Unwrap(err); inner != nil {
		if _, ok := inner.(interface{ Unwrap() []error }); ok && strings.HasPrefix(err.Error(), "decoding failed") {
			return leaves(inner)
		}
	}
	return []error{err}
}

// keyOf is the key a problem names: its text up to the first ": ".
func keyOf(err error) string {
	k, _, _ := strings.Cut(err.Error(), ": ")
	return k
}

// Validate checks the whole config but the provider types (ResolveTypes).
// It reports every problem, joined, each naming its key and bad value.
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
	add(c.Auth.Validate())
	add(c.Limits.Validate())
	add(c.Routing.Config.Validate())
	// The same check proxy.Update runs on the providers' shared policy.
	add(shared.Policy{Breaker: c.Breaker.Config, ThrottleK: c.Routing.AdaptiveThrottleK, QuotaRecheck: c.Breaker.QuotaRecheck}.Validate())
	add(c.Responses.Validate())
	add(c.SharedState.Validate())
	add(c.Tracing.Validate())
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
		add(provider.Under(key, p.Config.Validate()))
		if p.Name != "" && names[p.Name] {
			add(fmt.Errorf("%s.name: duplicate provider name %q", key, p.Name))
		}
		names[p.Name] = true
	}
	add(pricing.Validate(c.Pricing))
	add(pricing.ValidateProviders(c.Pricing, names))
	if len(c.Models) == 0 {
		add(errors.New("models: at least one model is required"))
	}
	models := make(map[string]bool, len(c.Models))
	for i, m := range c.Models {
		add(provider.Under(fmt.Sprintf("models[%d]", i), m.Validate(names)))
		if m.Name != "" && models[m.Name] {
			add(fmt.Errorf("models[%d].name: duplicate model %q", i, m.Name))
		}
		models[m.Name] = true
	}
	return errors.Join(errs...)
}

func checkAddr(key, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s: must be host:port, got %q", key, addr)
	}
	if port == "" {
		return fmt.Errorf("%s: missing port in %q", key, addr)
	}
	return nil
}

// Resolved is a provider entry resolved against the binary's provider
// types: its type and its decoded block.
type Resolved struct {
	// Type is the entry's type; its zero value (no Build) when the entry
	// names a type the binary does not serve.
	Type provider.Type
	// Block is what Type.NewBlock returned, with the entry's block decoded
	// into it (zero when the entry has none); nil for a type without one.
	Block any
}

// ResolveTypes checks every provider entry against types, the provider
// types the binary serves: the entry's type must be one of them, its
// type's block decodes strictly into the type's own Config, and any other
// key is an error. The i-th Resolved is the i-th entry's. The error joins
// every problem, each naming its full key (providers[1].type,
// providers[0].azure.api_version, unknown key providers[2].azre). A block
// that only partly decoded is still returned, its bad keys zero, so that
// building the adapter can report the entry's other problems.
func (c *Config) ResolveTypes(types provider.Types) ([]Resolved, error) {
	out := make([]Resolved, len(c.Providers))
	var errs []error
	for i := range c.Providers {
		p := &c.Providers[i]
		entry := fmt.Sprintf("providers[%d]", i)
		t, ok := types.Lookup(p.Type)
		if ok {
			out[i].Type = t
			if t.NewBlock != nil {
				out[i].Block = t.NewBlock()
			}
		} else {
			errs = append(errs, fmt.Errorf("%s.type: must be one of %s, got %q", entry, strings.Join(types.Names(), ", "), p.Type))
		}
		for _, name := range slices.Sorted(maps.Keys(p.Blocks)) {
			other, isType := types.Lookup(name)
			switch {
			case ok && name == t.Name && t.NewBlock != nil:
				problems, _ := decodeProblems(entry+"."+name, reflect.TypeOf(out[i].Block), decodeBlock(p.Blocks[name], out[i].Block))
				errs = append(errs, problems...)
			case isType && other.NewBlock != nil:
				errs = append(errs, fmt.Errorf("%s.%s: block given for a provider of type %q", entry, name, p.Type))
			default:
				errs = append(errs, fmt.Errorf("unknown key %s.%s", entry, name))
			}
		}
	}
	return out, errors.Join(errs...)
}

// decodeBlock decodes raw into block as Load decodes the file: strictly,
// weakly typed like viper, with the same duration rule.
func decodeBlock(raw, block any) error {
	d, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		Result:           block,
		ErrorUnused:      true,
		WeaklyTypedInput: true,
		DecodeHook:       durationHook,
	})
	if err != nil {
		return err
	}
	return d.Decode(raw)
}

// UnknownEnv returns the LLMROUTER_ environment variables that were set at
// Load but override no key (a typo such as LLMROUTER_LISTN), sorted. A
// variable the config itself names (auth.api_keys_env, a provider's
// api_key_env) is not unknown, whatever its name.
func (c *Config) UnknownEnv() []string { return c.unknownEnv }

func unknownEnv(keys []string, c *Config) []string {
	known := make(map[string]bool, len(keys)+len(c.Providers)+1)
	for _, k := range keys {
		known[EnvPrefix+"_"+strings.ToUpper(strings.ReplaceAll(k, ".", "_"))] = true
	}
	known[c.Auth.APIKeysEnv] = true
	known[c.AdminTokenEnv] = true
	for _, k := range c.Auth.Keys {
		known[k.KeyEnv] = true
	}
	for _, p := range c.Providers {
		known[p.APIKeyEnv] = true
	}
	var unknown []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, EnvPrefix+"_") && !known[name] {
			unknown = append(unknown, name)
		}
	}
	slices.Sort(unknown)
	return unknown
}

// AdminToken returns the admin listener's token from the variable
// admin_token_env names, read with getenv and trimmed of white space; ""
// when admin_token_env is "". A named variable that is unset or blank is
// an error naming the key, never a listener left open by mistake.
func (c *Config) AdminToken(getenv func(string) string) (string, error) {
	if c.AdminTokenEnv == "" {
		return "", nil
	}
	t := strings.TrimSpace(getenv(c.AdminTokenEnv))
	if t == "" {
		return "", fmt.Errorf("admin_token_env: the variable %s is unset or empty", c.AdminTokenEnv)
	}
	return t, nil
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
