package bedrock

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/llmrouter/llmrouter/internal/provider"
)

// Config is the `bedrock:` block of a provider of type bedrock.
type Config struct {
	// Region is the AWS region whose Bedrock runtime serves the provider
	// (us-east-1, eu-central-1, …). Required: a provider is one region, so
	// that regions fail over between each other like any two providers.
	// It names the endpoint (bedrock-runtime.{region}.amazonaws.com, unless
	// base_url says otherwise) and the SigV4 signing region.
	Region string `mapstructure:"region"`
	// Profile names the shared config profile (~/.aws/config) whose
	// credentials sign the requests. Empty means the default chain as the
	// AWS SDKs read it: AWS_PROFILE, else environment keys, the default
	// profile, web identity (EKS IRSA), the ECS task role, the EC2
	// instance role.
	Profile string `mapstructure:"profile"`
	// ControlPlaneURL is where the health probe lists foundation models
	// (Bedrock's control plane, scheme://host). Empty means
	// https://bedrock.{region}.amazonaws.com; set it with a VPC interface
	// endpoint for the bedrock service when the router has no route to the
	// public one.
	ControlPlaneURL string `mapstructure:"control_plane_url"`
}

// regionRE is an AWS region name: us-east-1, eu-central-2, us-gov-west-1.
var regionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`) })

// Validate reports every invalid field, joined, each naming its key
// relative to the `bedrock:` block.
func (c Config) Validate() error {
	var errs []error
	switch {
	case c.Region == "":
		errs = append(errs, errors.New("region: required (an AWS region such as us-east-1)"))
	case !regionRE().MatchString(c.Region):
		errs = append(errs, fmt.Errorf("region: %q is not an AWS region such as us-east-1", c.Region))
	}
	if c.ControlPlaneURL != "" {
		if _, err := hostURL(c.ControlPlaneURL, ""); err != nil {
			errs = append(errs, errors.New("control_plane_url: "+strings.TrimPrefix(err.Error(), "base_url: ")))
		}
	}
	return errors.Join(errs...)
}

// Type is the provider type bedrock, with its `bedrock:` block. It takes
// no API key: requests are signed with AWS credentials (doc.go).
var Type = provider.Type{Name: "bedrock",
	NewBlock: func() any { return new(Config) },
	Build: func(p provider.Config, _ string, block any) (provider.Adapter, error) {
		return New(p, *block.(*Config), nil)
	}}

// hostURL checks a scheme://host URL (provider.ParseBaseURL, no path) and
// returns it without a trailing slash; raw "" means def. Errors name the
// key base_url.
func hostURL(raw, def string) (string, error) {
	u, err := provider.ParseBaseURL(raw, def)
	if err != nil {
		return "", err
	}
	if strings.Trim(u.Path, "/") != "" {
		return "", fmt.Errorf("base_url: %q: give scheme://host only; the adapter appends /model/…", raw)
	}
	return u.Scheme + "://" + u.Host, nil
}
