package daemon

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/llmrouter/llmrouter/internal/config"
	"github.com/llmrouter/llmrouter/internal/pricing"
	"github.com/llmrouter/llmrouter/internal/route"
)

// WriteTable writes cfg's routing table: one line per target, by model
// name and tier, with its provider's type, the target's context window
// (the embedded table's when the config names none) and output cap. `router
// validate` prints it, and the status page's config section shows it
// (docs/ARCHITECTURE.md, "Status page").
func WriteTable(w io.Writer, cfg *config.Config) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tTIER\tPROVIDER\tTYPE\tPROVIDER MODEL\tCONTEXT\tMAX OUTPUT")
	types := map[string]string{}
	for _, p := range cfg.Providers {
		types[p.Name] = p.Type
	}
	models := route.WithKnown(cfg.Models, pricing.Known)
	slices.SortStableFunc(models, func(a, b route.ModelConfig) int { return strings.Compare(a.Name, b.Name) })
	for _, m := range models {
		targets := slices.Clone(m.Targets)
		slices.SortStableFunc(targets, func(a, b route.Target) int { return a.Tier - b.Tier })
		for _, t := range targets {
			limit := "-" // no cap (docs/ARCHITECTURE.md, "Output limits")
			if t.MaxOutputTokens > 0 {
				limit = strconv.FormatInt(t.MaxOutputTokens, 10)
			}
			window := "-" // unknown: never skipped (docs/ARCHITECTURE.md, "Context windows")
			if t.ContextWindow > 0 {
				window = strconv.FormatInt(t.ContextWindow, 10)
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", m.Name, t.Tier, t.Provider, types[t.Provider], t.Model, window, limit)
		}
	}
	_ = tw.Flush()
}

// table is WriteTable's text.
func table(cfg *config.Config) string {
	var b strings.Builder
	WriteTable(&b, cfg)
	return b.String()
}
