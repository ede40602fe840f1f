package provider

import (
	"fmt"
	"net/url"
	"strings"
)

// ParseBaseURL checks what every provider's base_url must be: an absolute
// http or https URL with a host, no credentials (keys belong in
// api_key_env or api_key_file, never in a URL that ends up in logs), no
// query and no fragment. An empty raw means def. Adapters add their own
// rule about the path. Errors name the key base_url.
func ParseBaseURL(raw, def string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		raw = def
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("base_url: %w", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("base_url: %q: scheme must be http or https", raw)
	case u.Host == "":
		return nil, fmt.Errorf("base_url: %q: no host", raw)
	case u.User != nil:
		return nil, fmt.Errorf("base_url: %q: credentials belong in api_key_env or api_key_file", raw)
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return nil, fmt.Errorf("base_url: %q: must not have a query or fragment", raw)
	}
	return u, nil
}
