package pricing

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/llmrouter/llmrouter/internal/outcome"
)

// Price is what one model costs, in US dollars per million tokens of each
// class. The zero Price is free.
type Price struct {
	// Input is a prompt token neither read from nor written to the
	// provider's cache.
	Input float64
	// CachedInput is a prompt token read from the provider's prompt cache
	// (OpenAI cached_tokens, Anthropic cache_read_input_tokens, Gemini
	// cachedContentTokenCount).
	CachedInput float64
	// CacheWrite is a prompt token written to the cache (Anthropic
	// cache_creation_input_tokens).
	CacheWrite float64
	// Output is a completion token, reasoning included.
	Output float64
}

// Cost is what usage costs at p, in US dollars: the prompt's plain,
// cached and cache-writing tokens each at its own price, the completion
// (reasoning included) at the output price. Counts are clamped so that
// the parts never exceed the prompt.
func (p Price) Cost(u outcome.Usage) float64 {
	prompt := max(u.PromptTokens, 0)
	cached := min(max(u.CachedInput, 0), prompt)
	written := min(max(u.CacheWrite, 0), prompt-cached)
	plain := prompt - cached - written
	return (float64(plain)*p.Input + float64(cached)*p.CachedInput + float64(written)*p.CacheWrite +
		float64(max(u.CompletionTokens, 0))*p.Output) / 1e6
}

// MaxTokens is the largest completion budget a front door accepts
// (max_tokens, max_completion_tokens, max_output_tokens): 2^31, above any
// model's output limit. A larger one, or one not finite, is a 400 naming
// the field in every front door's decoder, so an estimate stays far from
// saturating a key's budget (issue 31: max_tokens 1e999 did).
const MaxTokens = 1 << 31

// Estimate is what a request is expected to cost at p before it is sent:
// prompt tokens at the input price and maxTokens at the output price.
func (p Price) Estimate(prompt, maxTokens int64) float64 {
	return (float64(max(prompt, 0))*p.Input + float64(max(maxTokens, 0))*p.Output) / 1e6
}

// Entry is one entry of the `pricing:` list: the price of a model, at one
// provider or at any. Entries override the embedded table.
type Entry struct {
	// Provider is a configured provider's name; "" (the default) prices
	// the model at every provider without an entry of its own.
	Provider string `mapstructure:"provider"`
	// Model is the provider's model name, as the targets name it
	// (target.model; for Azure the deployment). Required.
	Model string `mapstructure:"model"`
	// Input and Output are USD per million prompt and completion tokens.
	Input  float64 `mapstructure:"input"`
	Output float64 `mapstructure:"output"`
	// CachedInput and CacheWrite are USD per million prompt tokens read
	// from and written to the provider's cache; absent, they cost Input.
	CachedInput *float64 `mapstructure:"cached_input"`
	CacheWrite  *float64 `mapstructure:"cache_write"`
}

// Price is the entry's price, absent cache prices filled with Input.
func (e Entry) Price() Price {
	p := Price{Input: e.Input, CachedInput: e.Input, CacheWrite: e.Input, Output: e.Output}
	if e.CachedInput != nil {
		p.CachedInput = *e.CachedInput
	}
	if e.CacheWrite != nil {
		p.CacheWrite = *e.CacheWrite
	}
	return p
}

// Validate reports every invalid entry, each naming its key
// (pricing[2].output).
func Validate(entries []Entry) error {
	var errs []error
	type id struct{ provider, model string }
	seen := make(map[id]int, len(entries))
	for i, e := range entries {
		key := fmt.Sprintf("pricing[%d]", i)
		if strings.TrimSpace(e.Model) == "" {
			errs = append(errs, fmt.Errorf("%s.model: must not be empty", key))
		} else if j, dup := seen[id{e.Provider, e.Model}]; dup {
			errs = append(errs, fmt.Errorf("%s: duplicate price of %q at provider %q (also pricing[%d])", key, e.Model, e.Provider, j))
		} else {
			seen[id{e.Provider, e.Model}] = i
		}
		for _, f := range []struct {
			name string
			v    *float64
		}{{"input", &e.Input}, {"output", &e.Output}, {"cached_input", e.CachedInput}, {"cache_write", e.CacheWrite}} {
			if f.v != nil && !(*f.v >= 0 && *f.v <= maxPrice) {
				errs = append(errs, fmt.Errorf("%s.%s: must be a price in USD per million tokens between 0 and %g, got %g", key, f.name, float64(maxPrice), *f.v))
			}
		}
	}
	return errors.Join(errs...)
}

// maxPrice bounds a price (USD per million tokens), so that no cost
// overflows.
const maxPrice = 1e9

// ValidateProviders reports entries naming a provider that is not
// configured (a typo would otherwise price nothing).
func ValidateProviders(entries []Entry, providers map[string]bool) error {
	var errs []error
	for i, e := range entries {
		if e.Provider != "" && !providers[e.Provider] {
			errs = append(errs, fmt.Errorf("pricing[%d].provider: no provider named %q", i, e.Provider))
		}
	}
	return errors.Join(errs...)
}

// Table finds the price of a provider's model: the configured entries
// first (that provider's, then any provider's), then the embedded list
// prices (AsOf). Build it with New; a nil *Table knows only the embedded
// prices. It is immutable.
type Table struct {
	byTarget map[target]Price
	byModel  map[string]Price
}

type target struct{ provider, model string }

// New returns the table of entries (which passed Validate) over the
// embedded prices.
func New(entries []Entry) *Table {
	t := &Table{byTarget: make(map[target]Price), byModel: make(map[string]Price)}
	for _, e := range entries {
		if e.Provider == "" {
			t.byModel[e.Model] = e.Price()
		} else {
			t.byTarget[target{e.Provider, e.Model}] = e.Price()
		}
	}
	return t
}

// Lookup returns the price of model at the provider named provider, and
// false when neither the config nor the embedded table has one (the
// request is then counted as costing 0). The embedded table is searched
// by the model's name, then by its name without a date or version suffix
// (gpt-4o-2024-08-06 → gpt-4o, claude-3-5-haiku-20241022 →
// claude-3-5-haiku, claude-3-5-haiku@20241022 and …-latest too). Lookup
// does not allocate.
func (t *Table) Lookup(provider, model string) (Price, bool) {
	if t != nil {
		if p, ok := t.byTarget[target{provider, model}]; ok {
			return p, true
		}
		if p, ok := t.byModel[model]; ok {
			return p, true
		}
	}
	return listPrice(model)
}

// listPrice is the embedded price of model or of its undated name.
func listPrice(model string) (Price, bool) {
	if p, ok := listPrices[model]; ok {
		return p, true
	}
	if base := undated(model); base != model {
		p, ok := listPrices[base]
		return p, ok
	}
	return Price{}, false
}

// ContextWindow is the embedded context window of model (tokens), by its
// name or its undated name as Lookup searches prices; 0 when the table
// does not know it (docs/ARCHITECTURE.md, "Context windows").
func ContextWindow(model string) int64 {
	if w, ok := listWindows[model]; ok {
		return w
	}
	return listWindows[undated(model)]
}

// MaxOutput is the most output tokens one answer of model may hold, from
// the embedded table (listMaxOutputs): its name as given, else without a
// trailing date or version; 0 when the table does not know it.
func MaxOutput(model string) int64 {
	if n, ok := listMaxOutputs[model]; ok {
		return n
	}
	return listMaxOutputs[undated(model)]
}

// Known is what the embedded table knows of model: its context window
// and its most output tokens, 0 each when unknown.
func Known(model string) (window, maxOutput int64) {
	return ContextWindow(model), MaxOutput(model)
}

// undated strips one trailing date or version from a model name: -latest,
// -YYYY-MM-DD, -YYYYMMDD, @YYYYMMDD, -NNN (Gemini's -001) or -NNNN
// (OpenAI's -0125).
func undated(m string) string {
	if b, ok := strings.CutSuffix(m, "-latest"); ok {
		return b
	}
	n := len(m)
	digits := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		}
		return s != ""
	}
	switch {
	case n > 11 && m[n-11] == '-' && m[n-3] == '-' && m[n-6] == '-' && digits(m[n-10:n-6]) && digits(m[n-5:n-3]) && digits(m[n-2:]):
		return m[:n-11]
	case n > 9 && (m[n-9] == '-' || m[n-9] == '@') && digits(m[n-8:]):
		return m[:n-9]
	case n > 5 && m[n-5] == '-' && digits(m[n-4:]):
		return m[:n-5]
	case n > 4 && m[n-4] == '-' && digits(m[n-3:]):
		return m[:n-4]
	}
	return m
}

// Round rounds a cost to the nano-dollar, the unit budgets count in.
func Round(usd float64) float64 { return math.Round(usd*1e9) / 1e9 }
