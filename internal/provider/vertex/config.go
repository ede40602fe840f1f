package vertex

import (
	"errors"
	"fmt"
	"regexp"
	"sync"

	"github.com/llmrouter/llmrouter/internal/provider"
)

// DefaultAPIVersion is the Vertex AI API version path segment.
const DefaultAPIVersion = "v1"

// Config is the `vertex:` block of a provider of type vertex.
type Config struct {
	// Project is the Google Cloud project ID whose Vertex AI quota and
	// billing serve the provider. Required.
	Project string `mapstructure:"project"`
	// Region is the Vertex AI location: a region such as us-central1,
	// europe-west4 or us-east5, or "global" (Google routes each request to
	// a region with capacity). Required: a provider is one location, so
	// that locations fail over between each other like any two providers.
	// It names the endpoint ({region}-aiplatform.googleapis.com, or
	// aiplatform.googleapis.com for global) unless base_url says otherwise.
	Region string `mapstructure:"region"`
	// APIVersion is the path segment before /projects ("v1" or
	// "v1beta1"). Empty means DefaultAPIVersion.
	APIVersion string `mapstructure:"api_version"`
}

var (
	// projectRE is a project ID (6 to 30 lower-case letters, digits and
	// hyphens), optionally domain-scoped ("example.com:my-project").
	projectRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([a-z0-9.-]+:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$`) })
	regionRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([a-z]+-[a-z]+[0-9]+|global)$`) })
)

// Validate reports every invalid field, joined, each naming its key
// relative to the `vertex:` block.
func (c Config) Validate() error {
	var errs []error
	switch {
	case c.Project == "":
		errs = append(errs, errors.New("project: required (a Google Cloud project ID)"))
	case !projectRE().MatchString(c.Project):
		errs = append(errs, fmt.Errorf("project: %q is not a Google Cloud project ID", c.Project))
	}
	switch {
	case c.Region == "":
		errs = append(errs, errors.New("region: required (a Vertex AI location such as us-central1, or global)"))
	case !regionRE().MatchString(c.Region):
		errs = append(errs, fmt.Errorf("region: %q is not a Vertex AI location such as us-central1 or global", c.Region))
	}
	if c.APIVersion != "" && c.APIVersion != "v1" && c.APIVersion != "v1beta1" {
		errs = append(errs, fmt.Errorf("api_version: %q: want v1 or v1beta1", c.APIVersion))
	}
	return errors.Join(errs...)
}

// Type is the provider type vertex, with its `vertex:` block. It takes no
// API key: requests carry OAuth2 access tokens from Application Default
// Credentials (doc.go).
var Type = provider.Type{Name: "vertex",
	NewBlock: func() any { return new(Config) },
	Build: func(p provider.Config, _ string, block any) (provider.Adapter, error) {
		return New(p, *block.(*Config), nil)
	}}
