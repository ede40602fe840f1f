package deploy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// The Helm chart (deploy/helm/llmrouter) is checked with helm itself, run
// as a tool of a module of its own (deploy/helm/tools), so that helm never
// enters the router's module graph.
const (
	chartDir     = "helm/llmrouter"
	helmToolsDir = "helm/tools"
	sidecarValue = "helm/examples/sidecar.yaml"
)

// helm runs the helm tool with args (paths relative to deploy/) and
// returns its standard output.
func helm(t *testing.T, args ...string) []byte {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	for i, a := range args {
		if strings.HasPrefix(a, "helm/") {
			args[i] = filepath.Join("..", "..", a) // from deploy/helm/tools
		}
	}
	var out, errOut bytes.Buffer
	cmd := exec.Command(goBin, append([]string{"tool", "helm"}, args...)...)
	cmd.Dir = helmToolsDir
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.Bytes()
}

// chartObjects are one rendering's objects, by kind.
type chartObjects struct {
	objects
	pdbs            []*policyv1.PodDisruptionBudget
	serviceMonitors []map[string]any
	prometheusRules []prometheusRule
}

// prometheusRule is the part of the operator's PrometheusRule the chart
// writes, decoded strictly.
type prometheusRule struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		Groups []map[string]any `json:"groups"`
	} `json:"spec"`
}

// render renders the chart with the values files and sets, and decodes
// every document strictly into its Kubernetes API type.
func render(t *testing.T, valueFiles []string, sets ...string) chartObjects {
	t.Helper()
	args := []string{"template", "rel", chartDir, "--namespace", "llm"}
	for _, f := range valueFiles {
		args = append(args, "-f", f)
	}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	out := helm(t, args...)
	var co chartObjects
	for i, doc := range docSeparator.Split(string(out), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		var err error
		switch gk := tm.APIVersion + " " + tm.Kind; gk {
		case "policy/v1 PodDisruptionBudget":
			o := new(policyv1.PodDisruptionBudget)
			err = strictYAML([]byte(doc), o)
			co.pdbs = append(co.pdbs, o)
		case "monitoring.coreos.com/v1 ServiceMonitor":
			var o map[string]any
			err = strictYAML([]byte(doc), &o)
			co.serviceMonitors = append(co.serviceMonitors, o)
		case "monitoring.coreos.com/v1 PrometheusRule":
			var o prometheusRule
			err = strictYAML([]byte(doc), &o)
			co.prometheusRules = append(co.prometheusRules, o)
		default:
			err = decodeManifest([]byte(doc), &co.objects)
		}
		if err != nil {
			t.Fatalf("document %d (%s): %v\n%s", i, tm.Kind, err, doc)
		}
	}
	return co
}

// TestHelmLint: helm lint passes on the default values and the sidecar
// example.
func TestHelmLint(t *testing.T) {
	helm(t, "lint", "--strict", chartDir)
	helm(t, "lint", "--strict", chartDir, "-f", sidecarValue)
}

// routerContainer returns the llmrouter container of d and whether it is
// a native sidecar (an init container that restarts).
func routerContainer(t *testing.T, d *appsv1.Deployment) (*corev1.Container, bool) {
	t.Helper()
	for i := range d.Spec.Template.Spec.InitContainers {
		if c := &d.Spec.Template.Spec.InitContainers[i]; c.Name == "llmrouter" {
			return c, c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		}
	}
	for i := range d.Spec.Template.Spec.Containers {
		if c := &d.Spec.Template.Spec.Containers[i]; c.Name == "llmrouter" {
			return c, false
		}
	}
	t.Fatalf("deployment %s has no llmrouter container", d.Name)
	return nil, false
}

// routerConfig is the config file the chart rendered, parsed.
func routerConfig(t *testing.T, co chartObjects) (raw []byte, cfg map[string]any) {
	t.Helper()
	for _, cm := range co.configMaps {
		if c, ok := cm.Data["config.yaml"]; ok {
			if err := yaml.Unmarshal([]byte(c), &cfg); err != nil {
				t.Fatal(err)
			}
			return []byte(c), cfg
		}
	}
	t.Fatal("no ConfigMap holds config.yaml")
	return nil, nil
}

// validate runs `router validate` on the rendered config with every
// variable the container takes from a Secret set, as the kubelet would.
func validate(t *testing.T, raw []byte, c *corev1.Container) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, path, raw)
	cmd := exec.Command("go", "run", "../cmd/router", "validate", "--config", path)
	env := os.Environ()
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			env = append(env, e.Name+"=value-of-"+strings.ToLower(e.Name))
		}
	}
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("router validate on the chart's config: %v\n%s\n%s", err, out.String(), raw)
	}
}

// checkPod: what every rendering's Deployment must be: its selector picks
// its pods, the probes hit the admin port's /readyz and /healthz, the
// config is mounted as a directory, and the pods roll when it changes.
func checkPod(t *testing.T, d *appsv1.Deployment, c *corev1.Container) {
	t.Helper()
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("selector %s=%s does not match the pod's labels %v", k, v, d.Spec.Template.Labels)
		}
	}
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Port != intstr.FromString("admin") {
			t.Errorf("%s probe %s, want an HTTP GET on the admin port", name, show(p))
		} else if want := map[string]string{"liveness": "/healthz"}[name]; want == "" && p.HTTPGet.Path != "/readyz" || want != "" && p.HTTPGet.Path != want {
			t.Errorf("%s probe path %s", name, p.HTTPGet.Path)
		}
	}
	if _, err := namedPort(c, "admin"); err != nil {
		t.Error(err)
	}
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/etc/llmrouter" || c.VolumeMounts[0].SubPath != "" {
		t.Errorf("config mount %+v, want the directory /etc/llmrouter", c.VolumeMounts)
	}
	if d.Spec.Template.Annotations["checksum/config"] == "" {
		t.Error("no checksum/config annotation: a config change would not roll the pods")
	}
	if c.Resources.Limits.Memory().IsZero() || envVar(c, "GOMEMLIMIT") == nil {
		t.Error("no memory limit or GOMEMLIMIT")
	}
}

// TestHelmGateway: the default values render a central gateway: the API
// on the pod's address behind a Service, the admin token generated and
// required (admin_token_env wired to the Secret), a PodDisruptionBudget of
// one, the dashboard; the config is one `router validate` accepts.
func TestHelmGateway(t *testing.T) {
	co := render(t, nil)
	if len(co.deployments) != 1 || len(co.services) != 1 || len(co.pdbs) != 1 || len(co.secrets) != 1 {
		t.Fatalf("rendered %d deployments, %d services, %d PDBs, %d secrets; want one each",
			len(co.deployments), len(co.services), len(co.pdbs), len(co.secrets))
	}
	d := co.deployments[0]
	c, native := routerContainer(t, d)
	if native {
		t.Error("the gateway runs llmrouter as a sidecar")
	}
	checkPod(t, d, c)
	raw, cfg := routerConfig(t, co)
	if cfg["listen"] != "0.0.0.0:8080" || cfg["admin_listen"] != "0.0.0.0:9090" || cfg["admin_token_env"] != "LLMROUTER_ADMIN_TOKEN" {
		t.Errorf("listen %v, admin_listen %v, admin_token_env %v", cfg["listen"], cfg["admin_listen"], cfg["admin_token_env"])
	}
	tok := envVar(c, "LLMROUTER_ADMIN_TOKEN")
	if tok == nil || tok.ValueFrom == nil || tok.ValueFrom.SecretKeyRef == nil || tok.ValueFrom.SecretKeyRef.Name != co.secrets[0].Name {
		t.Fatalf("LLMROUTER_ADMIN_TOKEN %s, want it from the Secret %s", show(tok), co.secrets[0].Name)
	}
	if v := co.secrets[0].Data[tok.ValueFrom.SecretKeyRef.Key]; len(v) < 32 {
		t.Errorf("the generated admin token has %d bytes, want at least 32", len(v))
	}
	if again := render(t, nil); bytes.Equal(again.secrets[0].Data["token"], co.secrets[0].Data["token"]) {
		t.Error("two installs got the same admin token")
	}
	pdb := co.pdbs[0]
	if pdb.Spec.MaxUnavailable == nil || *pdb.Spec.MaxUnavailable != intstr.FromInt32(1) ||
		!reflect.DeepEqual(pdb.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels) {
		t.Errorf("PDB %s, want maxUnavailable 1 over the Deployment's pods", show(&pdb.Spec))
	}
	svc := co.services[0]
	if !reflect.DeepEqual(svc.Spec.Selector, d.Spec.Selector.MatchLabels) {
		t.Errorf("Service selects %v, the pods are %v", svc.Spec.Selector, d.Spec.Selector.MatchLabels)
	}
	for _, p := range svc.Spec.Ports {
		if _, err := containerPort(c, p.TargetPort); err != nil {
			t.Errorf("Service port %s: %v", p.Name, err)
		}
	}
	if len(co.serviceMonitors)+len(co.prometheusRules) != 0 {
		t.Error("the Prometheus operator's CRDs render by default")
	}
	var dash bool
	for _, cm := range co.configMaps {
		if j := cm.Data["llmrouter-dashboard.json"]; j != "" {
			dash = j == strings.TrimSuffix(string(readFile(t, dashboardPath)), "\n")
		}
	}
	if !dash {
		t.Error("no dashboard ConfigMap holding deploy/grafana's dashboard as it is")
	}
	validate(t, raw, c)
}

// TestHelmSidecar: the sidecar example renders the app's pods with
// llmrouter as a native sidecar, its API on 127.0.0.1 only, no admin
// token (the admin pages answer a loopback Host), and a Service for the
// admin port alone.
func TestHelmSidecar(t *testing.T) {
	co := render(t, []string{sidecarValue})
	if len(co.deployments) != 1 || len(co.secrets) != 0 {
		t.Fatalf("rendered %d deployments and %d secrets, want one and none", len(co.deployments), len(co.secrets))
	}
	d := co.deployments[0]
	c, native := routerContainer(t, d)
	if !native {
		t.Error("llmrouter is not a native sidecar (an init container with restartPolicy Always)")
	}
	checkPod(t, d, c)
	if len(d.Spec.Template.Spec.Containers) != 1 || d.Spec.Template.Spec.Containers[0].Name != "search-app" {
		t.Errorf("the app container is missing: %v", d.Spec.Template.Spec.Containers)
	}
	raw, cfg := routerConfig(t, co)
	if cfg["listen"] != "127.0.0.1:8080" || cfg["admin_token_env"] != nil {
		t.Errorf("listen %v, admin_token_env %v; want 127.0.0.1:8080 and none", cfg["listen"], cfg["admin_token_env"])
	}
	for _, p := range co.services[0].Spec.Ports {
		if p.Name != "admin" {
			t.Errorf("the sidecar's Service exposes %s", p.Name)
		}
	}
	validate(t, raw, c)
}

// TestHelmMonitoring: with the operator's CRDs on and a Redis, the chart
// renders a ServiceMonitor on the admin port, the alert rules as they are
// in deploy/prometheus (and promtool accepts them), and shared_state.
func TestHelmMonitoring(t *testing.T) {
	co := render(t, nil, "serviceMonitor.enabled=true", "prometheusRule.enabled=true",
		"redis.url=redis://redis.llm:6379/0", "redis.passwordSecret.name=redis-auth")
	if len(co.serviceMonitors) != 1 || len(co.prometheusRules) != 1 {
		t.Fatalf("rendered %d ServiceMonitors and %d PrometheusRules, want one each", len(co.serviceMonitors), len(co.prometheusRules))
	}
	want := readRules(t)
	got := co.prometheusRules[0].Spec.Groups
	if len(got) != len(want.Groups) {
		t.Fatalf("the PrometheusRule has %d groups, deploy/prometheus %d", len(got), len(want.Groups))
	}
	rules, err := yaml.Marshal(map[string]any{"groups": got})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(rules, []byte("{{ $labels.provider }}")) {
		t.Error("the alerts' templates were expanded by helm")
	}
	if bin, err := exec.LookPath("promtool"); err == nil {
		path := filepath.Join(t.TempDir(), "rules.yaml")
		writeFile(t, path, rules)
		runPromtool(t, bin, "check", "rules", path)
	}
	raw, cfg := routerConfig(t, co)
	ss, _ := cfg["shared_state"].(map[string]any)
	if ss["redis_url"] != "redis://redis.llm:6379/0" || ss["password_env"] != "REDIS_PASSWORD" {
		t.Errorf("shared_state %v", ss)
	}
	c, _ := routerContainer(t, co.deployments[0])
	if e := envVar(c, "REDIS_PASSWORD"); e == nil || e.ValueFrom.SecretKeyRef.Name != "redis-auth" {
		t.Errorf("REDIS_PASSWORD %s, want it from redis-auth", show(e))
	}
	validate(t, raw, c)
	ep := fmt.Sprint(co.serviceMonitors[0]["spec"])
	if !strings.Contains(ep, "port:admin") || !strings.Contains(ep, "path:/metrics") {
		t.Errorf("ServiceMonitor spec %s, want /metrics on the admin port", ep)
	}
}
