package bedrock

import (
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/provider"
	"github.com/llmrouter/llmrouter/internal/provider/bedrock/bedrocktest"
)

// envCredentials isolates the chain and puts the fake's static test keys
// in the environment.
func envCredentials(t testing.TB) {
	t.Helper()
	isolateAWS(t)
	t.Setenv("AWS_ACCESS_KEY_ID", bedrocktest.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", bedrocktest.SecretAccessKey)
}

// newFake starts the fake Bedrock and returns an adapter for region
// us-east-1 pointed at it (runtime and control plane), with its created
// clock at testNow. Credentials come from the real default chain: the
// test sets the environment first.
func newFake(t testing.TB) (*Adapter, *bedrocktest.Server) {
	t.Helper()
	fake := bedrocktest.New()
	t.Cleanup(fake.Close)
	// The chain's own calls (the fake STS) go through the fake's client,
	// whose idle connections its Close ends.
	a, err := newAdapter(provider.Config{Name: "bedrock-use1", BaseURL: fake.URL},
		Config{Region: "us-east-1", ControlPlaneURL: fake.URL}, fake.Client(), defaultChain("us-east-1", "", fake.Client()))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	a.now = func() time.Time { return testNow }
	a.signer.now = time.Now
	return a, fake
}

// drain reads s to its end, returning the payloads (copied) and the
// final error.
func drain(t testing.TB, s provider.Stream) ([]string, error) {
	t.Helper()
	defer s.Close()
	var out []string
	for {
		c, err := s.Next()
		if err != nil {
			return out, err
		}
		out = append(out, string(c))
		if len(out) > 1000 {
			t.Fatal("stream does not end")
		}
	}
}
