package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/llmrouter/llmrouter/internal/admin"
)

func TestPrintKeys(t *testing.T) {
	rem := 37.5
	at := time.Date(2025, 6, 5, 0, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	printKeys(&b, []admin.KeyStatus{
		{Name: "capped", Period: "day", SpendUSD: 12.5, BudgetUSD: 50, RemainingUSD: &rem, ResetsAt: &at, RPM: 10, RPMInUse: 1, TPMInUse: -1, Models: []string{"m", "claude-*"}},
		{Name: "free", Period: "total", SpendUSD: 0.0000421, RPMInUse: -1, TPMInUse: -1},
	})
	out := b.String()
	for _, want := range []string{
		"KEY", "capped", "$12.50", "$50.00", "$37.50", "2025-06-05T00:00:00Z", "1/10", "m,claude-*",
		"free", "$0.000042", "never",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
