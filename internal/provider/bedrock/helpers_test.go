package bedrock

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testNow is the adapter's clock for created stamps; signing needs real
// time (the fake refuses a signature more than 15 minutes off).
var testNow = time.Date(2026, 8, 21, 12, 40, 0, 0, time.UTC)

// awsVars are the environment variables the AWS default chain reads.
var awsVars = []string{
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
	"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME",
	"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
	"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_STS", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_SDK_LOAD_CONFIG", "AWS_CA_BUNDLE",
}

// isolateAWS empties the default chain for one test: no AWS variable from
// the machine, shared files that do not exist, and the EC2 metadata
// service off (a test must never reach 169.254.169.254). t.Setenv keeps
// the test from running in parallel and restores everything after.
func isolateAWS(t testing.TB) {
	t.Helper()
	for _, v := range awsVars {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config-none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials-none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// TestApart: apart runs f to its end before it returns, and a panic in f
// is raised again on the caller.
func TestApart(t *testing.T) {
	ran := false
	apart(func() { ran = true })
	if !ran {
		t.Fatal("f did not run")
	}
	defer func() {
		if p := recover(); p != "boom" {
			t.Fatalf("recovered %v, want boom", p)
		}
	}()
	apart(func() { panic("boom") })
	t.Fatal("apart returned after a panic")
}
