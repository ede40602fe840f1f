package pricing

// AsOf is the date of the embedded list prices: the public prices the
// providers listed for their standard tier (not batch, flex or priority)
// and for prompts up to 200k tokens, as far as the project knew them on
// that date. They go stale: configure `pricing:` for the models you use,
// or whenever a provider changes its prices, your contract differs, or a
// model is missing (docs/ARCHITECTURE.md, "Client keys and spend").
const AsOf = "2025-12-01"

// listPrices are USD per million tokens, by the model's name at its
// provider: input, cached input (a cache read), cache write, output
// (reasoning included). OpenAI and Google bill no cache writes beyond the
// input price; Anthropic's cache write is the 5-minute one (1.25× input)
// and its cache read 0.1× input.
var listPrices = map[string]Price{
	// OpenAI
	"gpt-5":                  {1.25, 0.125, 1.25, 10},
	"gpt-5.1":                {1.25, 0.125, 1.25, 10},
	"gpt-5-mini":             {0.25, 0.025, 0.25, 2},
	"gpt-5-nano":             {0.05, 0.005, 0.05, 0.40},
	"gpt-5-chat-latest":      {1.25, 0.125, 1.25, 10},
	"gpt-4.1":                {2, 0.50, 2, 8},
	"gpt-4.1-mini":           {0.40, 0.10, 0.40, 1.60},
	"gpt-4.1-nano":           {0.10, 0.025, 0.10, 0.40},
	"gpt-4o":                 {2.50, 1.25, 2.50, 10},
	"gpt-4o-mini":            {0.15, 0.075, 0.15, 0.60},
	"chatgpt-4o-latest":      {5, 5, 5, 15},
	"gpt-4-turbo":            {10, 10, 10, 30},
	"gpt-4":                  {30, 30, 30, 60},
	"gpt-3.5-turbo":          {0.50, 0.50, 0.50, 1.50},
	"o1":                     {15, 7.50, 15, 60},
	"o1-mini":                {1.10, 0.55, 1.10, 4.40},
	"o1-pro":                 {150, 150, 150, 600},
	"o3":                     {2, 0.50, 2, 8},
	"o3-mini":                {1.10, 0.55, 1.10, 4.40},
	"o3-pro":                 {20, 20, 20, 80},
	"o4-mini":                {1.10, 0.275, 1.10, 4.40},
	"text-embedding-3-small": {0.02, 0.02, 0.02, 0},
	"text-embedding-3-large": {0.13, 0.13, 0.13, 0},
	"text-embedding-ada-002": {0.10, 0.10, 0.10, 0},

	// Anthropic
	"claude-opus-4-5":   {5, 0.50, 6.25, 25},
	"claude-opus-4-1":   {15, 1.50, 18.75, 75},
	"claude-opus-4-0":   {15, 1.50, 18.75, 75},
	"claude-opus-4":     {15, 1.50, 18.75, 75},
	"claude-sonnet-4-5": {3, 0.30, 3.75, 15},
	"claude-sonnet-4-0": {3, 0.30, 3.75, 15},
	"claude-sonnet-4":   {3, 0.30, 3.75, 15},
	"claude-3-7-sonnet": {3, 0.30, 3.75, 15},
	"claude-3-5-sonnet": {3, 0.30, 3.75, 15},
	"claude-haiku-4-5":  {1, 0.10, 1.25, 5},
	"claude-3-5-haiku":  {0.80, 0.08, 1, 4},
	"claude-3-opus":     {15, 1.50, 18.75, 75},
	"claude-3-haiku":    {0.25, 0.03, 0.30, 1.25},

	// Google (Gemini API)
	"gemini-3-pro-preview":  {2, 0.20, 2, 12},
	"gemini-2.5-pro":        {1.25, 0.125, 1.25, 10},
	"gemini-2.5-flash":      {0.30, 0.03, 0.30, 2.50},
	"gemini-2.5-flash-lite": {0.10, 0.01, 0.10, 0.40},
	"gemini-2.0-flash":      {0.10, 0.025, 0.10, 0.40},
	"gemini-2.0-flash-lite": {0.075, 0.075, 0.075, 0.30},
	"gemini-1.5-pro":        {1.25, 0.3125, 1.25, 5},
	"gemini-1.5-flash":      {0.075, 0.01875, 0.075, 0.30},
	"gemini-embedding-001":  {0.15, 0.15, 0.15, 0},
	"text-embedding-004":    {0, 0, 0, 0},
}

// listWindows are the context windows (tokens a model reads: prompt and
// answer together) of the models the embedded table prices, by the
// model's name at its provider, as their providers documented them on
// AsOf: a target's `context_window` defaults to them and its config
// overrides them (docs/ARCHITECTURE.md, "Context windows"). Embedding
// models are left out: their limit is per input, and a batch's estimate
// is the sum.
var listWindows = map[string]int64{
	// OpenAI
	"gpt-5":             400_000,
	"gpt-5.1":           400_000,
	"gpt-5-mini":        400_000,
	"gpt-5-nano":        400_000,
	"gpt-5-chat-latest": 128_000,
	"gpt-4.1":           1_047_576,
	"gpt-4.1-mini":      1_047_576,
	"gpt-4.1-nano":      1_047_576,
	"gpt-4o":            128_000,
	"gpt-4o-mini":       128_000,
	"chatgpt-4o-latest": 128_000,
	"gpt-4-turbo":       128_000,
	"gpt-4":             8_192,
	"gpt-3.5-turbo":     16_385,
	"o1":                200_000,
	"o1-mini":           128_000,
	"o1-pro":            200_000,
	"o3":                200_000,
	"o3-mini":           200_000,
	"o3-pro":            200_000,
	"o4-mini":           200_000,

	// Anthropic (the 1M-token window of some models is a beta a request
	// opts into: not the default)
	"claude-opus-4-5":   200_000,
	"claude-opus-4-1":   200_000,
	"claude-opus-4-0":   200_000,
	"claude-opus-4":     200_000,
	"claude-sonnet-4-5": 200_000,
	"claude-sonnet-4-0": 200_000,
	"claude-sonnet-4":   200_000,
	"claude-3-7-sonnet": 200_000,
	"claude-3-5-sonnet": 200_000,
	"claude-haiku-4-5":  200_000,
	"claude-3-5-haiku":  200_000,
	"claude-3-opus":     200_000,
	"claude-3-haiku":    200_000,

	// Google (Gemini API)
	"gemini-3-pro-preview":  1_048_576,
	"gemini-2.5-pro":        1_048_576,
	"gemini-2.5-flash":      1_048_576,
	"gemini-2.5-flash-lite": 1_048_576,
	"gemini-2.0-flash":      1_048_576,
	"gemini-2.0-flash-lite": 1_048_576,
	"gemini-1.5-pro":        2_097_152,
	"gemini-1.5-flash":      1_048_576,
}

// listMaxOutputs are the most output tokens one answer of each chat model
// the embedded table prices may hold, as its provider documented them on
// AsOf: a target's `max_output_tokens` defaults to them and its config
// overrides them (docs/ARCHITECTURE.md, "Output limits"). A request asking
// for more is sent this (the provider would refuse it with a 400: Claude
// Code asks for 32,000 to 128,000, opencode for 32,000). A model whose
// larger limit a request opts into (Claude 3.7 Sonnet's 128k beta) is
// left out, so the opt-in is never lowered.
var listMaxOutputs = map[string]int64{
	// OpenAI
	"gpt-5":             128_000,
	"gpt-5.1":           128_000,
	"gpt-5-mini":        128_000,
	"gpt-5-nano":        128_000,
	"gpt-5-chat-latest": 16_384,
	"gpt-4.1":           32_768,
	"gpt-4.1-mini":      32_768,
	"gpt-4.1-nano":      32_768,
	"gpt-4o":            16_384,
	"gpt-4o-mini":       16_384,
	"chatgpt-4o-latest": 16_384,
	"gpt-4-turbo":       4_096,
	"gpt-4":             8_192,
	"gpt-3.5-turbo":     4_096,
	"o1":                100_000,
	"o1-mini":           65_536,
	"o1-pro":            100_000,
	"o3":                100_000,
	"o3-mini":           100_000,
	"o3-pro":            100_000,
	"o4-mini":           100_000,

	// Anthropic
	"claude-opus-4-5":   64_000,
	"claude-opus-4-1":   32_000,
	"claude-opus-4-0":   32_000,
	"claude-opus-4":     32_000,
	"claude-sonnet-4-5": 64_000,
	"claude-sonnet-4-0": 64_000,
	"claude-sonnet-4":   64_000,
	"claude-3-5-sonnet": 8_192,
	"claude-haiku-4-5":  64_000,
	"claude-3-5-haiku":  8_192,
	"claude-3-opus":     4_096,
	"claude-3-haiku":    4_096,

	// Google (Gemini API)
	"gemini-3-pro-preview":  65_536,
	"gemini-2.5-pro":        65_536,
	"gemini-2.5-flash":      65_536,
	"gemini-2.5-flash-lite": 65_536,
	"gemini-2.0-flash":      8_192,
	"gemini-2.0-flash-lite": 8_192,
	"gemini-1.5-pro":        8_192,
	"gemini-1.5-flash":      8_192,
}
