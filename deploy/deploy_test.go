package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/llmrouter/llmrouter/internal/admin"
	"github.com/llmrouter/llmrouter/internal/config"
	"github.com/llmrouter/llmrouter/internal/limits"
	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/simulated"
	"github.com/llmrouter/llmrouter/internal/proxy"
	"github.com/llmrouter/llmrouter/internal/route"
	"github.com/llmrouter/llmrouter/internal/routing"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Names shared by the manifests, the scrape config and the alerts.
const (
	baseDir          = "base"
	sidecarName      = "llmrouter"
	adminPortName    = "llmrouter-admin"
	apiPortName      = "llmrouter-api"
	configMapName    = "llmrouter-config"
	configKey        = "config.yaml"
	keysSecretName   = "llmrouter-provider-keys"
	metricsService   = "llmrouter-metrics"
	deploymentName   = "example-app"
	secretExample    = "secret.example.yaml"
	kustomization    = "kustomization.yaml"
	alertRulesPath   = "prometheus/alert-rules.yaml"
	scrapeConfigPath = "prometheus/scrape-config.yaml"
	dashboardPath    = "grafana/llmrouter-dashboard.json"
	alertTestsPath   = "testdata/alert-rules.test.yaml"
)

// ---------------------------------------------------------------------------
// Kubernetes manifests

// objects are the decoded manifests of base/, by kind.
type objects struct {
	deployments []*appsv1.Deployment
	configMaps  []*corev1.ConfigMap
	services    []*corev1.Service
	secrets     []*corev1.Secret
}

// kustomizationFile is the part of kustomize's schema the base uses;
// decoding it strictly turns a misspelt or unexpected key into an error.
type kustomizationFile struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Labels     []struct {
		Pairs            map[string]string `json:"pairs"`
		IncludeSelectors bool              `json:"includeSelectors"`
		IncludeTemplates bool              `json:"includeTemplates"`
	} `json:"labels"`
	Images []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
		Digest  string `json:"digest"`
	} `json:"images"`
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// strictYAML decodes YAML into v as the API server's strict field
// validation does: names match case-sensitively (encoding/json alone would
// take readOnlyRootFileSystem for readOnlyRootFilesystem), and unknown or
// duplicate fields are errors.
func strictYAML(data []byte, v any) error {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(j, v)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// decodeManifest decodes every YAML document of data strictly (unknown
// and duplicate fields are errors) into the API type of its kind.
func decodeManifest(data []byte, into *objects) error {
	for i, doc := range docSeparator.Split(string(data), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			return fmt.Errorf("document %d: %w", i, err)
		}
		var err error
		switch gk := tm.APIVersion + " " + tm.Kind; gk {
		case "apps/v1 Deployment":
			o := new(appsv1.Deployment)
			err = strictYAML([]byte(doc), o)
			into.deployments = append(into.deployments, o)
		case "v1 ConfigMap":
			o := new(corev1.ConfigMap)
			err = strictYAML([]byte(doc), o)
			into.configMaps = append(into.configMaps, o)
		case "v1 Service":
			o := new(corev1.Service)
			err = strictYAML([]byte(doc), o)
			into.services = append(into.services, o)
		case "v1 Secret":
			o := new(corev1.Secret)
			err = strictYAML([]byte(doc), o)
			into.secrets = append(into.secrets, o)
		default:
			return fmt.Errorf("document %d: kind %q is not one this test knows; add it", i, gk)
		}
		if err != nil {
			return fmt.Errorf("document %d (%s): %w", i, tm.Kind, err)
		}
	}
	return nil
}

func readKustomization(t testing.TB) kustomizationFile {
	t.Helper()
	var k kustomizationFile
	if err := strictYAML(readFile(t, filepath.Join(baseDir, kustomization)), &k); err != nil {
		t.Fatalf("decoding %s: %v", kustomization, err)
	}
	return k
}

// loadBase decodes the kustomization's resources and, separately, the
// example Secret.
func loadBase(t testing.TB) (resources, example objects) {
	t.Helper()
	for _, r := range readKustomization(t).Resources {
		if err := decodeManifest(readFile(t, filepath.Join(baseDir, r)), &resources); err != nil {
			t.Fatalf("decoding %s: %v", r, err)
		}
	}
	if err := decodeManifest(readFile(t, filepath.Join(baseDir, secretExample)), &example); err != nil {
		t.Fatalf("decoding %s: %v", secretExample, err)
	}
	return resources, example
}

func TestKustomization(t *testing.T) {
	k := readKustomization(t)
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Errorf("got %s %s, want kustomize.config.k8s.io/v1beta1 Kustomization", k.APIVersion, k.Kind)
	}
	listed := map[string]bool{}
	for _, r := range k.Resources {
		listed[r] = true
		if _, err := os.Stat(filepath.Join(baseDir, r)); err != nil {
			t.Errorf("resource %s: %v", r, err)
		}
	}
	if listed[secretExample] {
		t.Errorf("resources list %s; want it left out so no key value ships", secretExample)
	}
	files, err := filepath.Glob(filepath.Join(baseDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		if name != kustomization && name != secretExample && !listed[name] {
			t.Errorf("%s is in %s but not in its resources", name, baseDir)
		}
	}
}

func TestManifestsDecodeStrictly(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(baseDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if filepath.Base(f) == kustomization {
			continue // TestKustomization
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			var o objects
			if err := decodeManifest(readFile(t, f), &o); err != nil {
				t.Fatal(err)
			}
		})
	}
	// The decoder itself: each of these must be refused.
	bad := []struct{ name, doc string }{
		{"unknown field", "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {selectr: {a: b}}\n"},
		{"field in the wrong case", "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {Selector: {a: b}}\n"},
		{"duplicate field", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\ndata: {c: d}\n"},
		{"wrong type", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, labels: [a]}\n"},
		{"bad quantity", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {template: {spec: {containers: [{name: c, resources: {limits: {cpu: lots}}}]}}}\n"},
		{"unknown kind", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n"},
	}
	for _, b := range bad {
		t.Run("refuses "+b.name, func(t *testing.T) {
			var o objects
			if err := decodeManifest([]byte(b.doc), &o); err == nil {
				t.Errorf("got nil error, want one")
			}
		})
	}
}

// ---------------------------------------------------------------------------
// The sidecar and its config

// deployment is the example app and the parts of it the checks need.
type deployment struct {
	d        *appsv1.Deployment
	sidecar  *corev1.Container
	app      *corev1.Container
	native   bool // the sidecar is an init container with restartPolicy Always
	config   *config.Config
	cfgPath  string // the ConfigMap's config.yaml, written out
	cm       *corev1.ConfigMap
	services []*corev1.Service
	secret   *corev1.Secret // the example
}

// loadDeployment finds the example Deployment and its sidecar, and loads
// the ConfigMap's config.yaml with the sidecar's environment: its literal
// LLMROUTER_* values and a dummy for every other variable it sets.
func loadDeployment(t *testing.T) *deployment {
	t.Helper()
	res, ex := loadBase(t)
	x := &deployment{services: res.services}
	for _, d := range res.deployments {
		if d.Name == deploymentName {
			x.d = d
		}
	}
	if x.d == nil {
		t.Fatalf("no Deployment %s in %s", deploymentName, baseDir)
	}
	spec := &x.d.Spec.Template.Spec
	for i := range spec.InitContainers {
		if c := &spec.InitContainers[i]; c.Name == sidecarName {
			x.sidecar, x.native = c, true
		}
	}
	for i := range spec.Containers {
		switch c := &spec.Containers[i]; {
		case c.Name == sidecarName:
			x.sidecar = c
		case x.app == nil:
			x.app = c
		}
	}
	if x.sidecar == nil || x.app == nil {
		t.Fatalf("got sidecar %v, app %v; want a container %q and an app container", x.sidecar != nil, x.app != nil, sidecarName)
	}
	for _, cm := range res.configMaps {
		if cm.Name == configMapName {
			x.cm = cm
		}
	}
	if x.cm == nil || x.cm.Data[configKey] == "" {
		t.Fatalf("no ConfigMap %s with key %s", configMapName, configKey)
	}
	for _, s := range ex.secrets {
		if s.Name == keysSecretName {
			x.secret = s
		}
	}
	set := map[string]string{}
	for _, e := range x.sidecar.Env {
		v, ok := "", true
		switch {
		case e.ValueFrom == nil:
			v = expandEnvRefs(e.Value, set)
		case e.ValueFrom.SecretKeyRef != nil:
			v = "test-key"
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.hostIP":
			v = testNodeIP
		default:
			ok = false
		}
		if ok {
			set[e.Name] = v
			t.Setenv(e.Name, v)
		}
	}
	path := filepath.Join(t.TempDir(), configKey)
	if err := os.WriteFile(path, []byte(x.cm.Data[configKey]), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("config.Load(ConfigMap %s %s): %v", configMapName, configKey, err)
	}
	x.config, x.cfgPath = cfg, path
	return x
}

// testNodeIP stands in for the node's IP (status.hostIP) in the sidecar's
// environment.
const testNodeIP = "10.0.0.7"

// envRef is a Kubernetes dependent environment variable reference.
var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expandEnvRefs expands $(NAME) in v as the kubelet does: from the
// variables defined before it in the container (set); a reference to any
// other stays as written.
func expandEnvRefs(v string, set map[string]string) string {
	return envRef.ReplaceAllStringFunc(v, func(ref string) string {
		if val, ok := set[ref[2:len(ref)-1]]; ok {
			return val
		}
		return ref
	})
}

// containerPort resolves a probe's or Service's port (number or name) in c.
func containerPort(c *corev1.Container, p intstr.IntOrString) (int32, error) {
	if p.Type == intstr.Int {
		return p.IntVal, nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort, nil
		}
	}
	return 0, fmt.Errorf("container %s has no port named %q", c.Name, p.StrVal)
}

func namedPort(c *corev1.Container, name string) (int32, error) {
	return containerPort(c, intstr.FromString(name))
}

// splitAddr returns addr's host and port.
func splitAddr(addr string) (string, int32, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.ParseInt(port, 10, 32)
	return host, int32(n), err
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func TestConfigMapConfigLoads(t *testing.T) {
	x := loadDeployment(t)
	types := map[string]bool{}
	for _, p := range x.config.Providers {
		types[p.Type] = true
	}
	for _, want := range []string{"openai", "anthropic", "openai_compatible"} {
		if !types[want] {
			t.Errorf("no provider of type %s in the ConfigMap's config", want)
		}
	}
	// Every model's last tier is the in-cluster model, which uses no key:
	// it serves when the clouds' keys are the trouble.
	byName := map[string]*config.Provider{}
	for i := range x.config.Providers {
		byName[x.config.Providers[i].Name] = &x.config.Providers[i]
	}
	for _, m := range x.config.Models {
		last := slices.MaxFunc(m.Targets, func(a, b route.Target) int { return a.Tier - b.Tier })
		if p := byName[last.Provider]; p == nil || p.APIKeyEnv != "" || p.APIKeyFile != "" {
			t.Errorf("model %s: got last tier %d on %s, want a local provider that uses no key", m.Name, last.Tier, last.Provider)
		}
	}
}

// TestSidecarTracesToTheNodeCollector: the sidecar's spans go to the
// OpenTelemetry Collector agent on its node, OTLP/HTTP on port 4318, at
// every sample (docs/ARCHITECTURE.md, "Tracing").
func TestSidecarTracesToTheNodeCollector(t *testing.T) {
	x := loadDeployment(t)
	if got, want := x.config.Tracing.OTLPEndpoint, "http://"+testNodeIP+":4318"; got != want {
		t.Errorf("tracing.otlp_endpoint %q with the sidecar's environment, want %q (the node's collector)", got, want)
	}
	if x.config.Tracing.SampleRatio != 1 {
		t.Errorf("tracing.sample_ratio %v, want 1", x.config.Tracing.SampleRatio)
	}
}

// TestConfigMapPassesRouterValidate runs the router's own validate on the
// ConfigMap's config with the sidecar's environment: it builds what serve
// builds (provider types and blocks, keys, adapters), which config.Load
// alone does not, and warns of an LLMROUTER_ variable that sets no key.
func TestConfigMapPassesRouterValidate(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	x := loadDeployment(t)
	var out bytes.Buffer
	cmd := exec.Command(goBin, "run", "../cmd/router", "validate", "--config", x.cfgPath)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("router validate on ConfigMap %s %s: %v\n%s", configMapName, configKey, err, out.String())
	}
	if strings.Contains(out.String(), "overrides no config key") {
		t.Errorf("got a warning about the sidecar's environment, want none:\n%s", out.String())
	}
}

// envVar returns c's environment variable name, or nil.
func envVar(c *corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func TestSidecar(t *testing.T) {
	x := loadDeployment(t)
	spec := &x.d.Spec.Template.Spec
	side := x.sidecar
	adminPort, adminErr := namedPort(side, adminPortName)

	probe := func(p *corev1.Probe, path string) error {
		if p == nil || p.HTTPGet == nil {
			return errors.New("got no httpGet probe")
		}
		if p.HTTPGet.Path != path {
			return fmt.Errorf("got path %s, want %s", p.HTTPGet.Path, path)
		}
		port, err := containerPort(side, p.HTTPGet.Port)
		if err != nil {
			return err
		}
		if port != adminPort {
			return fmt.Errorf("got port %d, want the admin port %d", port, adminPort)
		}
		return nil
	}
	// sc is the effective security setting: the container's, else the pod's.
	sc := side.SecurityContext
	if sc == nil {
		sc = &corev1.SecurityContext{}
	}
	psc := spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	isTrue := func(name string, c, p *bool) error {
		if c == nil {
			c = p
		}
		if c == nil || !*c {
			return fmt.Errorf("got %s unset or false, want true", name)
		}
		return nil
	}

	checks := []struct {
		name  string
		check func() error
	}{
		{"admin port named " + adminPortName, func() error { return adminErr }},
		{"admin listener reachable from outside the pod at the admin port", func() error {
			host, port, err := splitAddr(x.config.AdminListen)
			if err != nil {
				return fmt.Errorf("admin_listen %q: %w", x.config.AdminListen, err)
			}
			if isLoopback(host) {
				return fmt.Errorf("got admin_listen %s: the kubelet's probes and Prometheus cannot reach loopback", x.config.AdminListen)
			}
			if port != adminPort {
				return fmt.Errorf("got admin_listen port %d, want the %s port %d", port, adminPortName, adminPort)
			}
			return nil
		}},
		{"API on loopback at the port the app uses", func() error {
			host, port, err := splitAddr(x.config.Listen)
			if err != nil {
				return fmt.Errorf("listen %q: %w", x.config.Listen, err)
			}
			if !isLoopback(host) {
				return fmt.Errorf("got listen %s, want a loopback address: the API is for the pod's own containers", x.config.Listen)
			}
			p, err := namedPort(side, apiPortName)
			if err != nil {
				return err
			}
			if p != port {
				return fmt.Errorf("got %s port %d, want the listen port %d", apiPortName, p, port)
			}
			want := fmt.Sprintf("http://127.0.0.1:%d/v1", port)
			if e := envVar(x.app, "OPENAI_BASE_URL"); e == nil || e.Value != want {
				got := "unset"
				if e != nil {
					got = e.Value
				}
				return fmt.Errorf("got app OPENAI_BASE_URL %s, want %s", got, want)
			}
			return nil
		}},
		{"liveness probe /healthz on the admin port", func() error { return probe(side.LivenessProbe, "/healthz") }},
		{"readiness probe /readyz on the admin port", func() error { return probe(side.ReadinessProbe, "/readyz") }},
		{"startup probe, if any, /readyz on the admin port", func() error {
			if side.StartupProbe == nil {
				return nil
			}
			return probe(side.StartupProbe, "/readyz")
		}},
		{"native sidecar restarts always", func() error {
			if x.native && (side.RestartPolicy == nil || *side.RestartPolicy != corev1.ContainerRestartPolicyAlways) {
				return errors.New("got an init container without restartPolicy Always: it would block the pod's start")
			}
			return nil
		}},
		{"config mounted from the ConfigMap at --config", func() error {
			i := slices.Index(side.Args, "--config")
			if i < 0 || i+1 >= len(side.Args) {
				return fmt.Errorf("got args %q, want --config FILE", side.Args)
			}
			file := side.Args[i+1]
			for _, m := range side.VolumeMounts {
				if filepath.Dir(file) != filepath.Clean(m.MountPath) {
					continue
				}
				for _, v := range spec.Volumes {
					if v.Name == m.Name && v.ConfigMap != nil && v.ConfigMap.Name == configMapName && filepath.Base(file) == configKey {
						return nil
					}
				}
			}
			return fmt.Errorf("--config %s is not %s of ConfigMap %s mounted in the sidecar", file, configKey, configMapName)
		}},
		{"provider keys from the Secret, required", func() error {
			var errs []error
			for _, p := range x.config.Providers {
				if p.APIKeyFile != "" {
					errs = append(errs, fmt.Errorf("provider %s: api_key_file is not mounted by this base", p.Name))
				}
				if p.APIKeyEnv == "" {
					continue
				}
				e := envVar(side, p.APIKeyEnv)
				if e == nil || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
					errs = append(errs, fmt.Errorf("provider %s: env %s is not from a secretKeyRef", p.Name, p.APIKeyEnv))
					continue
				}
				ref := e.ValueFrom.SecretKeyRef
				if ref.Name != keysSecretName || ref.Optional == nil || *ref.Optional {
					errs = append(errs, fmt.Errorf("provider %s: got secretKeyRef %s optional %s, want %s optional false", p.Name, ref.Name, show(ref.Optional), keysSecretName))
				}
				if x.secret == nil {
					errs = append(errs, fmt.Errorf("no Secret %s in %s", keysSecretName, secretExample))
				} else if _, ok := x.secret.StringData[ref.Key]; !ok {
					errs = append(errs, fmt.Errorf("provider %s: %s has no key %s", p.Name, secretExample, ref.Key))
				}
			}
			return errors.Join(errs...)
		}},
		{"grace period exceeds shutdown_timeout", func() error {
			g := spec.TerminationGracePeriodSeconds
			if g == nil || time.Duration(*g)*time.Second <= x.config.ShutdownTimeout {
				return fmt.Errorf("got terminationGracePeriodSeconds %s, want more than shutdown_timeout %s", show(g), x.config.ShutdownTimeout)
			}
			return nil
		}},
		{"runAsNonRoot", func() error { return isTrue("runAsNonRoot", sc.RunAsNonRoot, psc.RunAsNonRoot) }},
		{"readOnlyRootFilesystem", func() error { return isTrue("readOnlyRootFilesystem", sc.ReadOnlyRootFilesystem, nil) }},
		{"no privilege escalation", func() error {
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				return errors.New("got allowPrivilegeEscalation unset or true, want false")
			}
			return nil
		}},
		{"capabilities drop ALL", func() error {
			if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
				return fmt.Errorf("got capabilities %+v, want drop ALL and no add", sc.Capabilities)
			}
			return nil
		}},
		{"seccomp RuntimeDefault", func() error {
			p := sc.SeccompProfile
			if p == nil {
				p = psc.SeccompProfile
			}
			if p == nil || p.Type != corev1.SeccompProfileTypeRuntimeDefault {
				return fmt.Errorf("got seccompProfile %+v, want RuntimeDefault", p)
			}
			return nil
		}},
		{"resource requests within limits", func() error {
			var errs []error
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				req, okReq := side.Resources.Requests[r]
				lim, okLim := side.Resources.Limits[r]
				if !okReq || !okLim {
					errs = append(errs, fmt.Errorf("%s: got request %v, limit %v; want both", r, okReq, okLim))
				} else if req.Cmp(lim) > 0 {
					errs = append(errs, fmt.Errorf("%s: got request %s over limit %s", r, req.String(), lim.String()))
				}
			}
			return errors.Join(errs...)
		}},
		{"port names are valid service names", func() error {
			for _, p := range side.Ports {
				if len(p.Name) > 15 {
					return fmt.Errorf("port name %q is longer than 15 characters", p.Name)
				}
			}
			return nil
		}},
		{"metrics Service selects the pod and targets the admin port", func() error {
			for _, s := range x.services {
				if s.Name != metricsService {
					continue
				}
				for k, v := range s.Spec.Selector {
					if x.d.Spec.Template.Labels[k] != v {
						return fmt.Errorf("selector %s=%s does not match the pod template's labels", k, v)
					}
				}
				if len(s.Spec.Selector) == 0 || len(s.Spec.Ports) != 1 {
					return fmt.Errorf("got selector %v and %d ports, want a selector and one port", s.Spec.Selector, len(s.Spec.Ports))
				}
				p, err := containerPort(side, s.Spec.Ports[0].TargetPort)
				if err != nil {
					return err
				}
				if p != adminPort {
					return fmt.Errorf("got targetPort %d, want the admin port %d", p, adminPort)
				}
				return nil
			}
			return fmt.Errorf("no Service %s", metricsService)
		}},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if err := c.check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Metric names

// metricInfo is what the router registers under one name.
type metricInfo struct {
	histogram bool
	labels    map[string]bool
}

// recorder is a prometheus.Registerer that keeps every collector.
type recorder struct {
	mu         sync.Mutex // guards collectors
	collectors []prometheus.Collector
}

var _ prometheus.Registerer = (*recorder)(nil)

func (r *recorder) Register(c prometheus.Collector) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = r.Register(c)
	}
}

func (r *recorder) Unregister(prometheus.Collector) bool { return false }

var (
	descName   = regexp.MustCompile(`fqName: "([^"]+)"`)
	descLabels = regexp.MustCompile(`variableLabels: \{([^}]*)\}\}$`)
)

// cmdMetrics are registered by internal/daemon on the registry it builds
// when it starts the listeners, not by the proxy.Server this test builds.
var cmdMetrics = map[string]metricInfo{
	"llmrouter_config_last_reload_successful": {labels: map[string]bool{}},
	"llmrouter_config_reloads_total":          {labels: map[string]bool{"result": true}},
}

// exportedMetrics builds a real proxy.Server on a simulated provider and
// returns every metric it and the admin gauges on it register, plus
// cmdMetrics.
func exportedMetrics(t *testing.T) map[string]metricInfo {
	t.Helper()
	sim, err := simulated.New(provider.Config{Name: "p"}, simulated.Config{})
	if err != nil {
		t.Fatal(err)
	}
	table, err := route.NewTable([]route.ModelConfig{{Name: "m", Targets: []route.Target{{Provider: "p", Model: "sim", Tier: 0}}}})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	s, err := proxy.Open(routing.Options{
		Providers:  []provider.Descriptor{{Name: "p", Type: "simulated", Adapter: sim}},
		Models:     table,
		Limits:     limits.Config{MaxBodyBytes: 1 << 20, RequestTimeout: time.Minute},
		Registerer: rec,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	admin.Register(rec, s.Routes())

	out := map[string]metricInfo{}
	for name, m := range cmdMetrics {
		out[name] = m
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, c := range rec.collectors {
		var hist bool
		switch c.(type) {
		case *prometheus.HistogramVec, prometheus.Histogram:
			hist = true
		}
		ch := make(chan *prometheus.Desc)
		go func() {
			c.Describe(ch)
			close(ch)
		}()
		for d := range ch {
			s := d.String()
			m := descName.FindStringSubmatch(s)
			if m == nil {
				t.Fatalf("no fqName in %s", s)
			}
			info := metricInfo{histogram: hist, labels: map[string]bool{}}
			if l := descLabels.FindStringSubmatch(s); l != nil && l[1] != "" {
				for _, name := range strings.Split(l[1], ",") {
					name = strings.TrimSuffix(strings.TrimPrefix(name, "c("), ")")
					info.labels[name] = true
				}
			}
			out[m[1]] = info
		}
	}
	if len(out) <= len(cmdMetrics) {
		t.Fatalf("the proxy registered no metrics")
	}
	return out
}

// Metric names are found in PromQL (and in Grafana's label_values(...)) by
// a regular expression, not a parser: an identifier that starts with
// llmrouter_ or gen_ai_ and is followed by `{`, `[`, `)`, `,`, white space
// or the end. Quoted strings are blanked first, and grouping clauses (by,
// without, on, ignoring, group_left, group_right) are removed, so label
// values and label names (gen_ai_provider_name) are not taken for metrics.
// Only these two prefixes are checked: up, go_* and process_* are not the
// router's to vouch for.
var (
	quotedString = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	groupingList = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	metricRef    = regexp.MustCompile(`\b((?:llmrouter|gen_ai)_[a-zA-Z0-9_:]*)(?:[\s{\[),]|$)`)
	selectorRef  = regexp.MustCompile(`\b((?:llmrouter|gen_ai)_[a-zA-Z0-9_:]*)\s*\{([^}]*)\}`)
	matcherLabel = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
)

// promqlRefs returns the metric names expr refers to and, per name, the
// label names its selectors match on.
func promqlRefs(expr string) (names []string, labels map[string][]string) {
	e := quotedString.ReplaceAllString(expr, `""`)
	e = groupingList.ReplaceAllString(e, " ")
	labels = map[string][]string{}
	for _, m := range metricRef.FindAllStringSubmatch(e, -1) {
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	for _, m := range selectorRef.FindAllStringSubmatch(e, -1) {
		for _, l := range matcherLabel.FindAllStringSubmatch(m[2], -1) {
			if !slices.Contains(labels[m[1]], l[1]) {
				labels[m[1]] = append(labels[m[1]], l[1])
			}
		}
	}
	return names, labels
}

func TestPromqlRefs(t *testing.T) {
	tests := []struct {
		name       string
		expr       string
		wantNames  []string
		wantLabels map[string][]string
	}{
		{"bare comparison", "llmrouter_breaker_state == 2", []string{"llmrouter_breaker_state"}, map[string][]string{}},
		{"selector and range", `sum by (namespace, app) (rate(llmrouter_requests_total{code=~"5.."}[5m]))`,
			[]string{"llmrouter_requests_total"}, map[string][]string{"llmrouter_requests_total": {"code"}}},
		{"histogram bucket", `histogram_quantile(0.99, sum by (le) (rate(llmrouter_overhead_seconds_bucket{pod=~"$pod"}[$__rate_interval])))`,
			[]string{"llmrouter_overhead_seconds_bucket"}, map[string][]string{"llmrouter_overhead_seconds_bucket": {"pod"}}},
		{"grouping label is not a metric", `sum by (gen_ai_provider_name) (rate(gen_ai_client_token_usage_sum[5m]))`,
			[]string{"gen_ai_client_token_usage_sum"}, map[string][]string{}},
		{"string is not a metric", `llmrouter_tokens_total{provider="llmrouter_fake "}`,
			[]string{"llmrouter_tokens_total"}, map[string][]string{"llmrouter_tokens_total": {"provider"}}},
		{"label_values", `label_values(llmrouter_system_health, namespace)`, []string{"llmrouter_system_health"}, map[string][]string{}},
		{"end of expression", `1 - llmrouter_system_health`, []string{"llmrouter_system_health"}, map[string][]string{}},
		{"other metrics ignored", `up{job="llmrouter"} == 0`, nil, map[string][]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			names, labels := promqlRefs(tt.expr)
			if !slices.Equal(names, tt.wantNames) {
				t.Errorf("got names %q, want %q", names, tt.wantNames)
			}
			if fmt.Sprint(labels) != fmt.Sprint(tt.wantLabels) {
				t.Errorf("got labels %v, want %v", labels, tt.wantLabels)
			}
		})
	}
}

// checkRefs reports the names in expr that the router does not export and
// selector labels the metric does not have (besides the target labels
// extra, and le on a histogram's buckets).
func checkRefs(expr string, exported map[string]metricInfo, extra map[string]bool) []error {
	names, labels := promqlRefs(expr)
	var errs []error
	for _, n := range names {
		base, suffix := n, ""
		info, ok := exported[n]
		if !ok {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				if b, found := strings.CutSuffix(n, s); found {
					if i, isMetric := exported[b]; isMetric && i.histogram {
						base, suffix, info, ok = b, s, i, true
					}
				}
			}
		}
		if !ok {
			errs = append(errs, fmt.Errorf("metric %s is not exported by the router", n))
			continue
		}
		for _, l := range labels[n] {
			if !info.labels[l] && !extra[l] && !(l == "le" && suffix == "_bucket") {
				errs = append(errs, fmt.Errorf("metric %s has no label %s", base, l))
			}
		}
	}
	return errs
}

// ruleFile is Prometheus' rule-file format, decoded strictly.
type ruleFile struct {
	Groups []ruleGroup `json:"groups"`
}

type ruleGroup struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Rules    []rule `json:"rules"`
}

type rule struct {
	Alert         string            `json:"alert,omitempty"`
	Record        string            `json:"record,omitempty"`
	Expr          string            `json:"expr"`
	For           string            `json:"for,omitempty"`
	KeepFiringFor string            `json:"keep_firing_for,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

func readRules(t testing.TB) ruleFile {
	t.Helper()
	var f ruleFile
	if err := strictYAML(readFile(t, alertRulesPath), &f); err != nil {
		t.Fatalf("decoding %s: %v", alertRulesPath, err)
	}
	return f
}

// scrapeFile is the part of prometheus.yml that scrape-config.yaml holds.
type scrapeFile struct {
	ScrapeConfigs []struct {
		JobName             string `json:"job_name"`
		ScrapeInterval      string `json:"scrape_interval"`
		MetricsPath         string `json:"metrics_path"`
		KubernetesSDConfigs []struct {
			Role string `json:"role"`
		} `json:"kubernetes_sd_configs"`
		RelabelConfigs []struct {
			SourceLabels []string `json:"source_labels"`
			Regex        string   `json:"regex"`
			Action       string   `json:"action"`
			TargetLabel  string   `json:"target_label"`
		} `json:"relabel_configs"`
	} `json:"scrape_configs"`
}

// targetLabels are the labels every scraped series gets: job, instance and
// those the scrape config's relabelling sets.
func targetLabels(t testing.TB) (job string, labels map[string]bool) {
	t.Helper()
	var f scrapeFile
	if err := strictYAML(readFile(t, scrapeConfigPath), &f); err != nil {
		t.Fatalf("decoding %s: %v", scrapeConfigPath, err)
	}
	if len(f.ScrapeConfigs) != 1 {
		t.Fatalf("got %d scrape configs, want 1", len(f.ScrapeConfigs))
	}
	sc := f.ScrapeConfigs[0]
	labels = map[string]bool{"job": true, "instance": true}
	for _, r := range sc.RelabelConfigs {
		if r.TargetLabel != "" {
			labels[r.TargetLabel] = true
		}
	}
	return sc.JobName, labels
}

func TestScrapeConfig(t *testing.T) {
	var f scrapeFile
	if err := strictYAML(readFile(t, scrapeConfigPath), &f); err != nil {
		t.Fatalf("decoding %s: %v", scrapeConfigPath, err)
	}
	if len(f.ScrapeConfigs) != 1 {
		t.Fatalf("got %d scrape configs, want 1", len(f.ScrapeConfigs))
	}
	sc := f.ScrapeConfigs[0]
	if len(sc.KubernetesSDConfigs) != 1 || sc.KubernetesSDConfigs[0].Role != "pod" {
		t.Errorf("got kubernetes_sd_configs %+v, want one of role pod", sc.KubernetesSDConfigs)
	}
	if sc.MetricsPath != "" && sc.MetricsPath != "/metrics" {
		t.Errorf("got metrics_path %s, want /metrics", sc.MetricsPath)
	}
	keep := false
	for _, r := range sc.RelabelConfigs {
		if r.Action == "keep" && slices.Equal(r.SourceLabels, []string{"__meta_kubernetes_pod_container_port_name"}) && r.Regex == adminPortName {
			keep = true
		}
	}
	if !keep {
		t.Errorf("no relabel rule keeping __meta_kubernetes_pod_container_port_name %s", adminPortName)
	}
	// The sidecar's admin port carries the name the scrape config keeps.
	x := loadDeployment(t)
	if _, err := namedPort(x.sidecar, adminPortName); err != nil {
		t.Error(err)
	}
	// The alerts group by labels the scrape config sets.
	_, labels := targetLabels(t)
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			for _, m := range groupingList.FindAllString(quotedString.ReplaceAllString(r.Expr, `""`), -1) {
				inner := m[strings.Index(m, "(")+1 : len(m)-1]
				for _, l := range strings.Split(inner, ",") {
					if l = strings.TrimSpace(l); l != "" && !labels[l] && l != "le" {
						t.Errorf("alert %s groups by %s, which the scrape config does not set", r.Alert, l)
					}
				}
			}
		}
	}
}

func TestAlertRules(t *testing.T) {
	exported := exportedMetrics(t)
	job, extra := targetLabels(t)
	f := readRules(t)
	seen := map[string]bool{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			t.Run(r.Alert, func(t *testing.T) {
				if r.Alert == "" {
					t.Fatalf("got a rule without alert (record %q); want alerts only", r.Record)
				}
				if seen[r.Alert] {
					t.Errorf("alert %s defined twice", r.Alert)
				}
				seen[r.Alert] = true
				for _, err := range checkRefs(r.Expr, exported, extra) {
					t.Error(err)
				}
				if r.For != "" {
					if _, err := time.ParseDuration(r.For); err != nil {
						t.Errorf("for: %v", err)
					}
				}
				switch s := r.Labels["severity"]; s {
				case "critical", "warning", "info":
				default:
					t.Errorf("got severity %q, want critical, warning or info", s)
				}
				for _, a := range []string{"summary", "description"} {
					if strings.TrimSpace(r.Annotations[a]) == "" {
						t.Errorf("annotation %s is empty", a)
					}
				}
				if strings.Contains(r.Expr, "up{") && !strings.Contains(r.Expr, fmt.Sprintf("job=%q", job)) {
					t.Errorf("up is not restricted to the scrape config's job %q", job)
				}
			})
		}
	}
	for _, want := range []string{"LLMRouterBreakerOpen", "LLMRouterSystemHealthLow", "LLMRouterErrorRatioHigh",
		"LLMRouterDegradedShareHigh", "LLMRouterConfigReloadFailed"} {
		if !seen[want] {
			t.Errorf("no alert %s", want)
		}
	}
}

// ---------------------------------------------------------------------------
// Dashboard

type dsRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type gridPos struct{ H, W, X, Y int }

type panel struct {
	ID         int     `json:"id"`
	Type       string  `json:"type"`
	Title      string  `json:"title"`
	Datasource *dsRef  `json:"datasource"`
	GridPos    gridPos `json:"gridPos"`
	Targets    []struct {
		RefID      string `json:"refId"`
		Expr       string `json:"expr"`
		Datasource *dsRef `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

type variable struct {
	Type       string          `json:"type"`
	Name       string          `json:"name"`
	Query      json.RawMessage `json:"query"`
	Datasource *dsRef          `json:"datasource"`
}

type dashboardFile struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

func readDashboard(t testing.TB) (dashboardFile, []panel) {
	t.Helper()
	var d dashboardFile
	if err := json.Unmarshal(readFile(t, dashboardPath), &d); err != nil {
		t.Fatalf("decoding %s: %v", dashboardPath, err)
	}
	var all []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			all = append(all, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return d, all
}

// variableQuery returns a query variable's query, which Grafana stores as a
// string or as {"query": "..."}.
func variableQuery(v variable) string {
	var s string
	if json.Unmarshal(v.Query, &s) == nil {
		return s
	}
	var o struct {
		Query string `json:"query"`
	}
	_ = json.Unmarshal(v.Query, &o)
	return o.Query
}

const datasourceVar = "${datasource}"

func TestDashboard(t *testing.T) {
	exported := exportedMetrics(t)
	_, extra := targetLabels(t)
	d, panels := readDashboard(t)
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("got uid %q, title %q, schemaVersion %d; want both set and schemaVersion 36 or later", d.UID, d.Title, d.SchemaVersion)
	}
	hasDS := false
	for _, v := range d.Templating.List {
		switch v.Type {
		case "datasource":
			hasDS = hasDS || (v.Name == "datasource" && variableQuery(v) == "prometheus")
		case "query":
			t.Run("variable "+v.Name, func(t *testing.T) {
				if v.Datasource == nil || v.Datasource.UID != datasourceVar {
					t.Errorf("got datasource %+v, want uid %s", v.Datasource, datasourceVar)
				}
				for _, err := range checkRefs(variableQuery(v), exported, extra) {
					t.Error(err)
				}
			})
		}
	}
	if !hasDS {
		t.Errorf("no datasource variable named datasource of type prometheus")
	}

	used := map[string]bool{}
	ids := map[int]bool{}
	for _, p := range panels {
		t.Run(fmt.Sprintf("panel %d %s", p.ID, p.Title), func(t *testing.T) {
			if ids[p.ID] || p.ID == 0 {
				t.Errorf("panel id %d is zero or not unique", p.ID)
			}
			ids[p.ID] = true
			if p.Type == "row" {
				return
			}
			if p.Datasource == nil || p.Datasource.UID != datasourceVar {
				t.Errorf("got datasource %+v, want uid %s", p.Datasource, datasourceVar)
			}
			if len(p.Targets) == 0 {
				t.Errorf("no targets")
			}
			for _, tg := range p.Targets {
				if tg.Datasource != nil && tg.Datasource.UID != datasourceVar {
					t.Errorf("target %s: got datasource %+v, want uid %s", tg.RefID, tg.Datasource, datasourceVar)
				}
				names, _ := promqlRefs(tg.Expr)
				if len(names) == 0 {
					t.Errorf("target %s: no llmrouter metric in %q", tg.RefID, tg.Expr)
				}
				for _, n := range names {
					used[n] = true
				}
				for _, err := range checkRefs(tg.Expr, exported, extra) {
					t.Errorf("target %s: %v", tg.RefID, err)
				}
			}
		})
	}
	t.Run("panels do not overlap", func(t *testing.T) {
		for i, a := range panels {
			for _, b := range panels[i+1:] {
				ga, gb := a.GridPos, b.GridPos
				if ga.X < gb.X+gb.W && gb.X < ga.X+ga.W && ga.Y < gb.Y+gb.H && gb.Y < ga.Y+ga.H {
					t.Errorf("panels %d and %d overlap: %+v, %+v", a.ID, b.ID, ga, gb)
				}
			}
			if a.GridPos.W <= 0 || a.GridPos.X+a.GridPos.W > 24 {
				t.Errorf("panel %d: got gridPos %+v, want within 24 columns", a.ID, a.GridPos)
			}
		}
	})
	for _, want := range []string{
		"llmrouter_requests_total", "llmrouter_request_duration_seconds_bucket",
		"llmrouter_time_to_first_token_seconds_bucket", "llmrouter_overhead_seconds_bucket",
		"llmrouter_upstream_requests_total", "llmrouter_breaker_state", "llmrouter_system_health",
		"llmrouter_bulkhead_in_flight", "llmrouter_ratelimit_remaining", "llmrouter_retries_total",
		"llmrouter_fallbacks_total", "llmrouter_tokens_total", "llmrouter_degraded_responses_total",
		"llmrouter_client_spend_usd_total", "llmrouter_client_budget_remaining_usd", "llmrouter_cost_usd_total",
	} {
		if !used[want] {
			t.Errorf("no panel charts %s", want)
		}
	}
}

// ---------------------------------------------------------------------------
// promtool

// promtool returns promtool's path, skipping the test when it is not on
// PATH, unless CI=true (then failing: CI must install it; Debian's package
// prometheus has it).
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("promtool is not on PATH and CI=true: install it (Debian: apt-get install prometheus)")
		}
		t.Skip("promtool is not on PATH")
	}
	return p
}

func runPromtool(t *testing.T, bin string, args ...string) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
}

// grafanaVars are what the dashboard's variables stand for when its
// expressions are parsed outside Grafana.
var grafanaVars = strings.NewReplacer(
	"$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h",
	"$namespace", ".*", "$pod", ".*",
)

func TestPromtool(t *testing.T) {
	bin := promtool(t)
	t.Run("check rules", func(t *testing.T) {
		runPromtool(t, bin, "check", "rules", alertRulesPath)
	})

	t.Run("alert unit tests", func(t *testing.T) {
		// promtool compares annotations exactly; the copy it tests has
		// none, so the cases need not restate every description.
		f := readRules(t)
		for gi := range f.Groups {
			for ri := range f.Groups[gi].Rules {
				f.Groups[gi].Rules[ri].Annotations = nil
			}
		}
		stripped, err := yaml.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "alert-rules.yaml"), stripped)
		cases := readFile(t, alertTestsPath)
		writeFile(t, filepath.Join(dir, "tests.yaml"), cases)

		var tf struct {
			Tests []struct {
				AlertRuleTest []struct {
					Alertname string `json:"alertname"`
				} `json:"alert_rule_test"`
			} `json:"tests"`
		}
		if err := yaml.Unmarshal(cases, &tf); err != nil {
			t.Fatal(err)
		}
		tested := map[string]bool{}
		for _, tc := range tf.Tests {
			for _, a := range tc.AlertRuleTest {
				tested[a.Alertname] = true
			}
		}
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				if !tested[r.Alert] {
					t.Errorf("alert %s has no case in %s", r.Alert, alertTestsPath)
				}
			}
		}
		runPromtool(t, bin, "test", "rules", filepath.Join(dir, "tests.yaml"))
	})

	t.Run("dashboard expressions parse", func(t *testing.T) {
		// Each expression is evaluated on no data: the answer is empty, but
		// promtool must parse it first.
		_, panels := readDashboard(t)
		type exprTest struct {
			Expr     string `json:"expr"`
			EvalTime string `json:"eval_time"`
		}
		var exprs []exprTest
		for _, p := range panels {
			for _, tg := range p.Targets {
				e := grafanaVars.Replace(tg.Expr)
				if strings.Contains(e, "$") {
					t.Errorf("panel %d target %s: unknown variable in %q", p.ID, tg.RefID, tg.Expr)
					continue
				}
				exprs = append(exprs, exprTest{Expr: e, EvalTime: "1m"})
			}
		}
		file := map[string]any{
			"rule_files":          []string{},
			"evaluation_interval": "1m",
			"tests": []map[string]any{{
				"interval":         "1m",
				"input_series":     []any{},
				"promql_expr_test": exprs,
			}},
		}
		data, err := json.Marshal(file) // JSON is YAML
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "dashboard.test.yaml")
		writeFile(t, path, data)
		runPromtool(t, bin, "test", "rules", path)
	})
}

// ---------------------------------------------------------------------------
// Dockerfile

func TestDockerfile(t *testing.T) {
	df := string(readFile(t, "../Dockerfile"))
	def, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	_, api, err1 := splitAddr(def.Listen)
	_, admin, err2 := splitAddr(def.AdminListen)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"CGO_ENABLED=0",
		"-X main.version=",
		"./cmd/router",
		"USER 65532",
		`ENTRYPOINT ["/router"]`,
		fmt.Sprintf("EXPOSE %d %d", api, admin),
	} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	// An allow-list .dockerignore (it starts by ignoring everything) must
	// let in what the build needs.
	ignore := strings.Fields(string(readFile(t, "../.dockerignore")))
	if slices.Contains(ignore, "*") {
		for _, want := range []string{"!go.mod", "!go.sum", "!cmd/", "!configs/", "!internal/"} {
			if !slices.Contains(ignore, want) {
				t.Errorf(".dockerignore does not let %s into the build context", strings.TrimPrefix(want, "!"))
			}
		}
	}
}

// ---------------------------------------------------------------------------

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// show prints *p, or "unset" for nil.
func show[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
