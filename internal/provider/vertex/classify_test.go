package vertex

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/outcome"
	"github.com/llmrouter/llmrouter/internal/provider/providertest"
)

// echoes is the classification step table (docs/ARCHITECTURE.md,
// "Classification"): Vertex AI's error answers, Claude's in Anthropic's
// shape (rawPredict passes them on) and the others in Google's, with
// providertest.Mark where they quote the client's input.
var echoes = []providertest.Echo{
	// Claude's path quotes input as Anthropic does.
	{Name: "claude unknown beta", Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"Unexpected value(s) ` +
		"`" + providertest.Mark + "`" + ` for the ` + "`anthropic-beta`" + ` header. Please consult our documentation at docs.anthropic.com or try again without the header."}}`,
		Kind: outcome.ClientError},
	{Name: "claude unknown block tag", Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"messages.0.content.0: Input tag '` +
		providertest.Mark + `' found using 'type' does not match any of the expected tags: 'document', 'image', 'text', 'thinking', 'tool_result', 'tool_use'"}}`,
		Kind: outcome.ClientError},
	{Name: "claude extra field", Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"` + providertest.Mark + `: Extra inputs are not permitted"}}`,
		Kind: outcome.ClientError},
	{Name: "claude credit balance", Status: 400, Body: `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API."}}`,
		Kind: outcome.ClientError, Suspect: outcome.Quota},
	{Name: "claude overloaded", Status: 529, Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, Kind: outcome.Overloaded},

	// Google's shape.
	{Name: "unknown field", Status: 400, Body: `{"error":{"code":400,"message":"Invalid JSON payload received. Unknown name \"` + providertest.Mark +
		`\" at 'generation_config': Cannot find field.","status":"INVALID_ARGUMENT"}}`, Kind: outcome.ClientError},
	{Name: "publisher model missing", Status: 404, Body: `{"error":{"code":404,"message":"Publisher Model ` +
		"`projects/p/locations/us-east5/publishers/google/models/gemini-9`" + ` was not found or your project does not have access to it.","status":"NOT_FOUND"}}`,
		Kind: outcome.ClientError, Suspect: outcome.TargetMissing},
	{Name: "per-minute quota", Status: 429, Body: `{"error":{"code":429,"message":"Quota exceeded for aiplatform.googleapis.com/generate_content_requests_per_minute_per_project_per_base_model with base model: gemini-2.5-flash.","status":"RESOURCE_EXHAUSTED"}}`,
		Kind: outcome.RateLimited},
	{Name: "per-day quota", Status: 429, Body: `{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel"}]}]}}`,
		Kind: outcome.Quota},
	{Name: "permission denied", Status: 403, Body: `{"error":{"code":403,"message":"Permission 'aiplatform.endpoints.predict' denied","status":"PERMISSION_DENIED"}}`, Kind: outcome.Auth},
	{Name: "unauthenticated", Status: 401, Body: `{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}`, Kind: outcome.Auth},
}

// fuzzNow is the clock of the fuzz target and the step table.
var fuzzNow = time.Date(2026, 7, 15, 18, 30, 0, 0, time.UTC)

func classifyAt(status int, h http.Header, body []byte) *outcome.Error {
	return ClassifyError(status, h, body, fuzzNow)
}

func TestClassifyEchoes(t *testing.T) { providertest.CheckEchoes(t, echoes, classifyAt) }

// FuzzClassifyError classifies arbitrary error bodies under statuses
// 400-599 with an arbitrary Retry-After, in both of Vertex's shapes. It
// must not panic and always returns a usable *outcome.Error with the HTTP
// status; and the body quoted in the step table's answers (echoes) where
// Vertex quotes client input leaves each one's kind as it is with nothing
// there.
func FuzzClassifyError(f *testing.F) {
	for _, r := range echoes {
		f.Add(r.Status, r.With(""), "")
	}
	f.Add(400, []byte("credit balance"), "")
	f.Add(404, []byte("model: claude-x"), "")
	f.Add(599, []byte(strings.Repeat("é", 400)+"\xff"), "1e30")
	f.Fuzz(func(t *testing.T, status int, body []byte, ra string) {
		status = 400 + int(uint(status)%200)
		h := http.Header{}
		if ra != "" {
			h["Retry-After"] = []string{ra}
		}
		e := ClassifyError(status, h, body, fuzzNow)
		providertest.CheckClassified(t, "ClassifyError", e, 25*time.Hour)
		if e.Status != status {
			t.Fatalf("Status %d, want %d", e.Status, status)
		}
		providertest.FuzzEchoes(t, echoes, classifyAt, string(body))
	})
}
