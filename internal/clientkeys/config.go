package clientkeys

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/llmrouter/llmrouter/internal/budget"
)

// Limits are what one named client key may do: the fields of an
// `auth.keys` entry beside its name and secret (docs/ARCHITECTURE.md,
// "Client keys and spend").
type Limits struct {
	// Models are the model names the key may ask for; a name ending in
	// `*` allows every name with that prefix ("claude-*"), a lone "*"
	// every name. Empty (the default) allows every model. A request for
	// another gets 403 model_not_allowed before anything is sent.
	Models []string `mapstructure:"models"`
	// RPM and TPM are the key's own requests and tokens per minute
	// (tokens estimated as for the providers' buckets, reconciled with the
	// usage reported). Past them: 429 rate_limit_exceeded with
	// Retry-After. 0 (the default) means no limit.
	RPM int64 `mapstructure:"rpm"`
	TPM int64 `mapstructure:"tpm"`
	// BudgetUSD caps the key's spend per BudgetPeriod, in US dollars at
	// the configured prices. Once the spend recorded in the period reaches
	// it, requests get 429 budget_exceeded until the period resets. 0
	// (the default) means no cap.
	BudgetUSD float64 `mapstructure:"budget_usd"`
	// BudgetPeriod is day, week or month (UTC calendar: midnight, Monday,
	// the first) or total (never resets). Default month.
	BudgetPeriod string `mapstructure:"budget_period"`
}

// Validate reports every invalid field, each named under prefix
// ("auth.keys[0]").
func (l Limits) Validate(prefix string) error {
	var errs []error
	for i, m := range l.Models {
		switch {
		case m == "":
			errs = append(errs, fmt.Errorf("%s.models[%d]: must not be empty", prefix, i))
		case strings.IndexByte(m, '*') >= 0 && strings.IndexByte(m, '*') != len(m)-1:
			errs = append(errs, fmt.Errorf("%s.models[%d]: `*` may only end a pattern, got %q", prefix, i, m))
		}
	}
	if l.RPM < 0 {
		errs = append(errs, fmt.Errorf("%s.rpm: must not be negative, got %d", prefix, l.RPM))
	}
	if l.TPM < 0 {
		errs = append(errs, fmt.Errorf("%s.tpm: must not be negative, got %d", prefix, l.TPM))
	}
	if l.BudgetUSD < 0 || math.IsNaN(l.BudgetUSD) || math.IsInf(l.BudgetUSD, 0) || l.BudgetUSD > maxBudgetUSD {
		errs = append(errs, fmt.Errorf("%s.budget_usd: must be between 0 and %g, got %g", prefix, float64(maxBudgetUSD), l.BudgetUSD))
	}
	if _, err := budget.ParsePeriod(l.BudgetPeriod); err != nil {
		errs = append(errs, fmt.Errorf("%s.budget_period: %w", prefix, err))
	}
	return errors.Join(errs...)
}

// maxBudgetUSD keeps a budget in nano-dollars within an int64 with room
// for the spend past it.
const maxBudgetUSD = 1e9

// period is the parsed BudgetPeriod (Validate has checked it).
func (l Limits) period() budget.Period {
	p, _ := budget.ParsePeriod(l.BudgetPeriod)
	return p
}

// NameOK reports whether name may name a key: 1 to 64 letters, digits,
// `_`, `.` or `-` (it labels metrics and names the key's state in Redis).
func NameOK(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}
