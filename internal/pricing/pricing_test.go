package pricing

import (
	"math"
	"strings"
	"testing"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestCost(t *testing.T) {
	p := Price{Input: 3, CachedInput: 0.30, CacheWrite: 3.75, Output: 15}
	tests := []struct {
		name string
		u    outcome.Usage
		want float64
	}{
		{"nothing", outcome.Usage{}, 0},
		{"plain", outcome.Usage{PromptTokens: 1000, CompletionTokens: 100}, (1000*3 + 100*15) / 1e6},
		{"cache read at its rate", outcome.Usage{PromptTokens: 1000, CachedInput: 800, CompletionTokens: 100}, (200*3 + 800*0.30 + 100*15) / 1e6},
		{"cache write at its rate", outcome.Usage{PromptTokens: 1000, CacheWrite: 1000}, 1000 * 3.75 / 1e6},
		{"parts clamped to the prompt", outcome.Usage{PromptTokens: 10, CachedInput: 8, CacheWrite: 8}, (8*0.30 + 2*3.75) / 1e6},
		{"negative counts are none", outcome.Usage{PromptTokens: -5, CompletionTokens: -1}, 0},
	}
	for _, tt := range tests {
		if got := p.Cost(tt.u); !near(got, tt.want) {
			t.Errorf("%s: got %g, want %g", tt.name, got, tt.want)
		}
	}
	if got := p.Estimate(1000, 100); !near(got, (1000*3+100*15)/1e6) {
		t.Errorf("estimate: got %g", got)
	}
}

func TestLookup(t *testing.T) {
	half := 0.5
	tb := New([]Entry{
		{Model: "gpt-4o-mini", Input: 1, Output: 2},
		{Provider: "azure-eu", Model: "gpt-4o-mini", Input: 10, Output: 20, CachedInput: &half},
		{Model: "my-llama", Input: 0, Output: 0},
	})
	tests := []struct {
		provider, model string
		want            Price
		ok              bool
	}{
		{"azure-eu", "gpt-4o-mini", Price{10, 0.5, 10, 20}, true},
		{"openai", "gpt-4o-mini", Price{1, 1, 1, 2}, true},
		{"openai", "gpt-4o", Price{2.50, 1.25, 2.50, 10}, true},
		{"openai", "gpt-4o-2024-08-06", Price{2.50, 1.25, 2.50, 10}, true},
		{"anthropic", "claude-3-5-haiku-20241022", Price{0.80, 0.08, 1, 4}, true},
		{"vertex", "claude-3-5-haiku@20241022", Price{0.80, 0.08, 1, 4}, true},
		{"anthropic", "claude-3-5-haiku-latest", Price{0.80, 0.08, 1, 4}, true},
		{"gemini", "gemini-2.0-flash-001", Price{0.10, 0.025, 0.10, 0.40}, true},
		{"openai", "gpt-3.5-turbo-0125", Price{0.50, 0.50, 0.50, 1.50}, true},
		{"ollama", "my-llama", Price{}, true},
		{"ollama", "llama3.2", Price{}, false},
	}
	for _, tt := range tests {
		got, ok := tb.Lookup(tt.provider, tt.model)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s/%s: got %+v %v, want %+v %v", tt.provider, tt.model, got, ok, tt.want, tt.ok)
		}
	}
	if _, ok := (*Table)(nil).Lookup("x", "gpt-4o"); !ok {
		t.Error("a nil table does not know the list prices")
	}
	if n := testing.AllocsPerRun(100, func() { tb.Lookup("openai", "gpt-4o-2024-08-06") }); n != 0 {
		t.Errorf("Lookup allocates %g times", n)
	}
}

func TestValidate(t *testing.T) {
	neg := -1.0
	err := Validate([]Entry{{Model: ""}, {Model: "a", Input: -1, CacheWrite: &neg}, {Model: "a", Output: math.NaN()}, {Provider: "x", Model: "a"}})
	for _, want := range []string{
		"pricing[0].model: must not be empty",
		"pricing[1].input: must be a price",
		"pricing[1].cache_write: must be a price",
		"pricing[2]: duplicate price of \"a\" at provider \"\" (also pricing[1])",
		"pricing[2].output: must be a price",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
	if err := ValidateProviders([]Entry{{Provider: "nope", Model: "a"}}, map[string]bool{"p": true}); err == nil ||
		!strings.Contains(err.Error(), "pricing[0].provider: no provider named \"nope\"") {
		t.Errorf("got %v", err)
	}
}

// TestContextWindow: the embedded windows, found by the name or the
// undated name as prices are; every window belongs to a priced model.
func TestContextWindow(t *testing.T) {
	for _, tt := range []struct {
		model string
		want  int64
	}{
		{"gpt-4o-mini", 128_000},
		{"gpt-4o-2024-08-06", 128_000},
		{"claude-sonnet-4-5-20250929", 200_000},
		{"gemini-2.5-pro", 1_048_576},
		{"text-embedding-3-small", 0}, // per input, not per batch
		{"my-local-model", 0},
	} {
		if got := ContextWindow(tt.model); got != tt.want {
			t.Errorf("ContextWindow(%q) = %d, want %d", tt.model, got, tt.want)
		}
	}
	for m := range listWindows {
		if _, ok := listPrices[m]; !ok {
			t.Errorf("%s has a window but no price: the table is the price table's models", m)
		}
	}
}

// TestMaxOutput: the embedded output limits, found by the name or the
// undated name; every one belongs to a priced model and fits its window,
// and a limit a request opts into (Claude 3.7 Sonnet's 128k beta) is not
// one.
func TestMaxOutput(t *testing.T) {
	for _, tt := range []struct {
		model string
		want  int64
	}{
		{"gpt-4o", 16_384},
		{"gpt-4o-2024-08-06", 16_384},
		{"claude-sonnet-4-5-20250929", 64_000},
		{"claude-3-5-sonnet-20241022", 8_192},
		{"claude-3-7-sonnet-20250219", 0},
		{"gemini-2.5-flash", 65_536},
		{"text-embedding-3-small", 0},
		{"my-local-model", 0},
	} {
		if got := MaxOutput(tt.model); got != tt.want {
			t.Errorf("MaxOutput(%q) = %d, want %d", tt.model, got, tt.want)
		}
	}
	for m, n := range listMaxOutputs {
		if _, ok := listPrices[m]; !ok {
			t.Errorf("%s has an output limit but no price: the table is the price table's models", m)
		}
		if w := listWindows[m]; n <= 0 || w > 0 && n > w {
			t.Errorf("%s: output limit %d, window %d", m, n, w)
		}
	}
}
