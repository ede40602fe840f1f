package redisconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of the `shared_state:` block.
const (
	DefaultKeyPrefix = "llmrouter:"
	DefaultTimeout   = 50 * time.Millisecond
)

// Config is the `shared_state:` block (docs/CONFIG.md): one view of every
// provider across a fleet of routers, kept in Redis. Off while RedisURL is
// empty.
type Config struct {
	// RedisURL is redis://[user:password@]host:port/db, or rediss:// for
	// TLS. A Sentinel deployment adds ?master_name=NAME (and more sentinels
	// as &addr=host:port); a Cluster sets Mode cluster (more seed nodes as
	// &addr=host:port). "" means this process only.
	RedisURL string `mapstructure:"redis_url"`
	// KeyPrefix starts every key. Keys expire by themselves.
	KeyPrefix string `mapstructure:"key_prefix"`
	// PasswordEnv names the environment variable holding Redis's password
	// (it replaces a password in the URL). The password is never logged
	// nor shown in /admin.
	PasswordEnv string `mapstructure:"password_env"`
	// TLSCAFile is a PEM file of the CA(s) that sign Redis's certificate
	// (rediss:// only); "" trusts the system's roots.
	TLSCAFile string `mapstructure:"tls_ca_file"`
	// Mode is "" (one server, or Sentinel when the URL names a
	// master_name) or "cluster".
	Mode string `mapstructure:"mode"`
	// Timeout bounds every Redis call; past it the router decides with
	// its local state at once and marks the shared state down until Redis
	// answers again. Default 50ms.
	Timeout time.Duration `mapstructure:"timeout"`
}

// On reports whether shared state is configured.
func (c Config) On() bool { return c.RedisURL != "" }

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.KeyPrefix == "" {
		c.KeyPrefix = DefaultKeyPrefix
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	return c
}

// Validate reports every invalid field, each naming its key. It reads
// PasswordEnv but never prints the password.
func (c Config) Validate() error {
	if !c.On() {
		return nil
	}
	var errs []error
	if _, err := c.options(); err != nil {
		errs = append(errs, err)
	}
	if strings.ContainsAny(c.KeyPrefix, "{}") {
		errs = append(errs, fmt.Errorf("shared_state.key_prefix: must not contain { or } (they would break Cluster hash tags), got %q", c.KeyPrefix))
	}
	if c.Timeout < 0 || (c.Timeout > 0 && c.Timeout < time.Millisecond) || c.Timeout > 10*time.Second {
		errs = append(errs, fmt.Errorf("shared_state.timeout: must be between 1ms and 10s, got %s", c.Timeout))
	}
	if c.PasswordEnv != "" {
		if _, ok := os.LookupEnv(c.PasswordEnv); !ok {
			errs = append(errs, fmt.Errorf("shared_state.password_env: environment variable %s is not set", c.PasswordEnv))
		}
	}
	return errors.Join(errs...)
}

// Redacted is the URL without its password, for logs.
func (c Config) Redacted() string {
	u, err := url.Parse(c.RedisURL)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// options parses the URL into go-redis's universal options.
func (c Config) options() (*redis.UniversalOptions, error) {
	bad := func(err error) error {
		// go-redis's messages may quote the URL; never its password.
		msg := strings.ReplaceAll(err.Error(), c.RedisURL, c.Redacted())
		return fmt.Errorf("shared_state.redis_url: %s", msg)
	}
	u, err := url.Parse(c.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("shared_state.redis_url: not a URL (%s)", c.Redacted())
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, fmt.Errorf("shared_state.redis_url: scheme must be redis or rediss, got %q", u.Scheme)
	}
	o := &redis.UniversalOptions{}
	switch {
	case c.Mode != "" && c.Mode != "cluster":
		return nil, fmt.Errorf("shared_state.mode: must be \"\" or cluster, got %q", c.Mode)
	case c.Mode == "cluster":
		co, err := redis.ParseClusterURL(c.RedisURL)
		if err != nil {
			return nil, bad(err)
		}
		o.Addrs, o.Username, o.Password, o.TLSConfig, o.IsClusterMode = co.Addrs, co.Username, co.Password, co.TLSConfig, true
	case u.Query().Has("master_name"):
		fo, err := redis.ParseFailoverURL(c.RedisURL)
		if err != nil {
			return nil, bad(err)
		}
		o.Addrs, o.MasterName, o.DB, o.TLSConfig = fo.SentinelAddrs, fo.MasterName, fo.DB, fo.TLSConfig
		o.Username, o.Password = fo.Username, fo.Password
		o.SentinelUsername, o.SentinelPassword = fo.SentinelUsername, fo.SentinelPassword
	default:
		so, err := redis.ParseURL(c.RedisURL)
		if err != nil {
			return nil, bad(err)
		}
		o.Addrs, o.Username, o.Password, o.DB, o.TLSConfig = []string{so.Addr}, so.Username, so.Password, so.DB, so.TLSConfig
	}
	if c.PasswordEnv != "" {
		o.Password = os.Getenv(c.PasswordEnv)
		if o.MasterName != "" && o.SentinelPassword == "" {
			o.SentinelPassword = o.Password
		}
	}
	if o.TLSConfig != nil && o.TLSConfig.MinVersion < tls.VersionTLS12 {
		o.TLSConfig.MinVersion = tls.VersionTLS12
	}
	if c.TLSCAFile != "" {
		if o.TLSConfig == nil {
			return nil, fmt.Errorf("shared_state.tls_ca_file: set, but redis_url is not rediss:// (TLS)")
		}
		pemData, err := os.ReadFile(c.TLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("shared_state.tls_ca_file: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemData) {
			return nil, fmt.Errorf("shared_state.tls_ca_file: %s holds no PEM certificate", c.TLSCAFile)
		}
		o.TLSConfig.RootCAs = pool
	}
	timeout := c.WithDefaults().Timeout
	// Every call is bounded by Timeout through its context; dialing gets
	// longer (a TLS handshake), off the request path once the pool is warm.
	o.DialTimeout = max(timeout, time.Second)
	o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = timeout, timeout, timeout
	o.ContextTimeoutEnabled = true
	o.MaxRetries = -1 // no retries: fall back to local state at once
	// One dial attempt (go-redis's default retries 5 times, 100ms apart:
	// a request would wait 400ms on a Redis that refuses connections).
	o.DialerRetries = 1
	o.DialerRetryTimeout = time.Millisecond
	o.MinIdleConns = 2
	o.DisableIdentity = true // no CLIENT SETINFO round trips on old servers
	return o, nil
}
