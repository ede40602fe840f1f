package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/provider/vertex/vertextest"
)

// TestValidateCredentials: router validate --credentials says where each
// cloud provider's credentials come from (an AWS access key in the
// environment, a Google service-account key file checked by a fake token
// endpoint), never a secret, and fails naming a provider that has none.
// Without the flag validate looks for none.
func TestValidateCredentials(t *testing.T) {
	dir := t.TempDir()
	for _, v := range []string{"AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CA_BUNDLE",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "GOOGLE_APPLICATION_CREDENTIALS"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	t.Setenv("HOME", dir)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true") // never 169.254.169.254 from a test
	t.Setenv("CLOUDSDK_CONFIG", dir)
	t.Setenv("GCE_METADATA_HOST", "127.0.0.1:1")
	const secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	vx := vertextest.New()
	t.Cleanup(vx.Close)
	key, err := vx.WriteKeyFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", key)
	cfg := writeConfig(t, "providers:\n"+
		"  - {name: aws, type: bedrock, bedrock: {region: us-east-1}}\n"+
		"  - {name: gcp, type: vertex, base_url: "+vx.URL+", vertex: {project: test-project, region: us-east5}}\n"+
		"models: [{name: m, targets: [{provider: aws, model: meta.llama3-1-70b-instruct-v1:0}, {provider: gcp, model: gemini-2.5-flash}]}]\n")

	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"validate", "--config", cfg}, &out, &errb); code != 0 || strings.Contains(out.String(), "CREDENTIALS") || vx.Minted() != 0 {
		t.Fatalf("without --credentials: exit %d, %d tokens minted:\n%s%s", code, vx.Minted(), out.String(), errb.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"validate", "--config", cfg, "--credentials"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"aws       bedrock  environment variables (EnvConfigCredentials), key AKIA…MPLE",
		"gcp       vertex   GOOGLE_APPLICATION_CREDENTIALS: " + key + ", service_account " + vertextest.ClientEmail} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String()+errb.String(), secret) || strings.Contains(out.String(), "ya29.") {
		t.Errorf("a secret was printed:\n%s", out.String())
	}

	os.Unsetenv("AWS_ACCESS_KEY_ID")
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), []string{"validate", "--config", cfg, "--credentials"}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "router validate: provider aws: no credentials: auth:") {
		t.Errorf("no AWS credentials: exit %d:\n%s%s", code, out.String(), errb.String())
	}
}
