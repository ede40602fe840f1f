package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/llmrouter/llmrouter/internal/config"
)

const fleetDir = "fleet"

// TestFleetOverlay: deploy/fleet is the sidecar example plus a Redis; its
// files decode strictly, its kustomization lists what exists, and the
// sidecar's environment with the overlay's variables turns shared_state on
// in a config that loads, with no variable that sets no key, and the Redis
// Service the URL names.
func TestFleetOverlay(t *testing.T) {
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
		Patches    []struct {
			Path string `json:"path"`
		} `json:"patches"`
	}
	if err := yaml.UnmarshalStrict(readFile(t, filepath.Join(fleetDir, kustomization)), &k); err != nil {
		t.Fatalf("%s/%s: %v", fleetDir, kustomization, err)
	}
	if !slices.Contains(k.Resources, "../"+baseDir) {
		t.Errorf("resources %v: want ../%s", k.Resources, baseDir)
	}
	var res objects
	for _, r := range k.Resources {
		if r == "../"+baseDir {
			continue
		}
		if err := decodeManifest(readFile(t, filepath.Join(fleetDir, r)), &res); err != nil {
			t.Fatalf("%s: %v", r, err)
		}
	}
	var patch objects
	for _, p := range k.Patches {
		if err := decodeManifest(readFile(t, filepath.Join(fleetDir, p.Path)), &patch); err != nil {
			t.Fatalf("patch %s: %v", p.Path, err)
		}
	}
	if len(patch.deployments) != 1 || patch.deployments[0].Name != deploymentName {
		t.Fatalf("want one patch of Deployment %s", deploymentName)
	}
	var env map[string]string
	for _, c := range patch.deployments[0].Spec.Template.Spec.InitContainers {
		if c.Name == sidecarName {
			env = map[string]string{}
			for _, e := range c.Env {
				env[e.Name] = e.Value
				if e.ValueFrom != nil {
					env[e.Name] = "test-password"
				}
			}
		}
	}
	if env == nil {
		t.Fatalf("the patch has no init container %s", sidecarName)
	}
	url := env["LLMROUTER_SHARED_STATE_REDIS_URL"]
	var service string
	for _, s := range res.services {
		service = s.Name
	}
	if !strings.Contains(url, "//"+service+":") {
		t.Errorf("redis_url %q does not name the overlay's Service %q", url, service)
	}
	x := loadDeployment(t)
	for name, v := range env {
		t.Setenv(name, v)
	}
	cfg, err := config.Check(x.cfgPath)
	if err != nil {
		t.Fatalf("the sidecar's config with the fleet's environment: %v", err)
	}
	if !cfg.SharedState.On() || cfg.SharedState.PasswordEnv == "" {
		t.Errorf("shared_state %+v: want on, with the password from a variable", cfg.SharedState)
	}
	if u := cfg.UnknownEnv(); len(u) > 0 {
		t.Errorf("variables that set no key: %v", u)
	}
	if _, err := os.Stat(filepath.Join(fleetDir, "redis.yaml")); err != nil {
		t.Error(err)
	}
}
