package providertest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

// Mark stands in an Echo's body wherever the provider quotes client input.
const Mark = "{{echo}}"

// Echo is one row of an adapter's classification step table
// (docs/ARCHITECTURE.md, "Classification"): a real error answer of the
// provider, with Mark wherever the provider quotes what the client sent
// (an unknown anthropic-beta value, a block's tag, a field's name), and
// the kind it must be classified as, with the provider-wide kind its
// words only suspect (outcome.Error.Suspect), when the quoted input is
// empty. Whatever the input, the kind must stay the same: no request can
// make a provider's error say quota, auth or a missing model.
type Echo struct {
	Name    string
	Status  int
	Header  map[string]string
	Body    string
	Kind    outcome.Kind
	Suspect outcome.Kind
}

// With is e's body with input quoted where Mark stands, JSON-escaped as
// the provider writes it.
func (e Echo) With(input string) []byte {
	q, _ := json.Marshal(input) // a string always encodes
	return []byte(strings.ReplaceAll(e.Body, Mark, string(q[1:len(q)-1])))
}

// Headers is e's header.
func (e Echo) Headers() http.Header {
	h := http.Header{}
	for k, v := range e.Header {
		h.Set(k, v)
	}
	return h
}

// Hostile are inputs a client sends to make a provider's echo read like
// an outage of the provider, or a prompt too long for the target: the
// words every adapter once matched, and JSON that would close the quoted
// string.
var Hostile = []string{
	"", "credit balance", "Your credit balance is too low to access the Anthropic API.", "usage limit", "spend limit",
	"You have reached your specified API usage limits.", "model: claude-x", "model", "not found", "does not exist",
	"The model `x` does not exist", "model \"x\" not found", "API key not valid", "API key expired",
	"The provided model identifier is invalid.", "on-demand throughput isn't supported", "end of its life",
	"access to the model", "limit: 0", "insufficient_quota", "billing_error", "Invalid URL", "loading model", "server busy",
	"PerDay", "API_KEY_INVALID", "prompt is too long", "prompt is too long: 1 tokens > 0 maximum",
	"Input is too long for requested model.", "This model's maximum context length is 8192 tokens.",
	"The input token count (1) exceeds the maximum number of tokens allowed (0).", "context_length_exceeded", "exceed_context_size_error", `"}}`, `","type":"billing_error","x":"`, "\x00\xff", strings.Repeat("credit balance ", 300),
}

// Classify is an adapter's ClassifyError at a fixed clock.
type Classify func(status int, h http.Header, body []byte) *outcome.Error

// CheckEchoes is the step table: every row is classified as it says with
// an empty input, and every Hostile input leaves its kind as it is.
func CheckEchoes(t *testing.T, rows []Echo, classify Classify) {
	t.Helper()
	for _, r := range rows {
		t.Run(r.Name, func(t *testing.T) {
			e := classify(r.Status, r.Headers(), r.With(""))
			if e.Kind != r.Kind || e.Suspect != r.Suspect {
				t.Fatalf("got kind %v suspect %v, want %v %v (%s)", e.Kind, e.Suspect, r.Kind, r.Suspect, e.Message)
			}
			if !strings.Contains(r.Body, Mark) {
				return
			}
			for _, in := range Hostile {
				CheckEcho(t, r, classify, in)
			}
		})
	}
}

// CheckEcho fails tb unless row r with input quoted is classified as the
// same kind as with an empty input.
func CheckEcho(tb testing.TB, r Echo, classify Classify, input string) {
	tb.Helper()
	want := classify(r.Status, r.Headers(), r.With("")).Kind
	if got := classify(r.Status, r.Headers(), r.With(input)); got.Kind != want {
		tb.Fatalf("%s quoting %q: got kind %v (suspect %v), want %v as without it", r.Name, input, got.Kind, got.Suspect, want)
	}
}

// FuzzEchoes checks every row with a Mark quoting input (CheckEcho):
// call it from the adapter's FuzzClassifyError with its fuzzed body.
func FuzzEchoes(tb testing.TB, rows []Echo, classify Classify, input string) {
	tb.Helper()
	for _, r := range rows {
		if strings.Contains(r.Body, Mark) {
			CheckEcho(tb, r, classify, input)
		}
	}
}
