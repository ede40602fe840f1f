package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/llmrouter/llmrouter/internal/admin"
)

// cmdStatus prints the provider table from a running router's
// /admin/providers.
func cmdStatus(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, adminURL := statusFlags()
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr); commandUsage(stderr, lookupCommand("status")) }
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "router status: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	url := strings.TrimSuffix(*adminURL, "/") + "/admin/providers"
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		fmt.Fprintln(stderr, "router status:", err)
		return 2
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(stderr, "router status: asking the router:", err)
		return 1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "router status: %s answered %s\n", url, resp.Status)
		return 1
	}
	var body struct {
		Providers []admin.ProviderStatus `json:"providers"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&body); err != nil {
		fmt.Fprintln(stderr, "router status: reading the answer:", err)
		return 1
	}
	printStatus(stdout, body.Providers)
	return 0
}

// cmdEnable asks a running router to lift a provider's quota block and
// disabled targets (POST /admin/providers/{name}/enable).
func cmdEnable(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, adminURL := statusFlags()
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr); commandUsage(stderr, lookupCommand("enable")) }
	if err := fs.Parse(args); err != nil {
		return 2
	}
	// The provider may come before the flags too: router enable NAME --admin URL.
	name := fs.Arg(0)
	if fs.NArg() > 1 {
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return 2
		}
		if fs.NArg() > 0 {
			name = ""
		}
	}
	if name == "" {
		fmt.Fprintln(stderr, "router enable: name one provider")
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	url := strings.TrimSuffix(*adminURL, "/") + "/admin/providers/" + name + "/enable"
	req, err := http.NewRequestWithContext(ctx, "POST", url, nil)
	if err != nil {
		fmt.Fprintln(stderr, "router enable:", err)
		return 2
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(stderr, "router enable: asking the router:", err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "router enable: %s answered %s: %s\n", url, resp.Status, strings.TrimSpace(string(body)))
		return 1
	}
	fmt.Fprintln(stdout, strings.TrimSpace(string(body)))
	return 0
}

// statusFlags returns status's flag set and its --admin.
func statusFlags() (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	admin := fs.String("admin", "http://127.0.0.1:9090", "the router's admin listener `URL`")
	return fs, admin
}

func printStatus(w io.Writer, ps []admin.ProviderStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROVIDER\tTYPE\tSTATE\tCOOLDOWN\tSCORE\tSUCCESS\tP95\tIN-FLIGHT\tREQ LEFT\tTOK LEFT\tBLOCKED\tLAST ERROR")
	for _, p := range ps {
		cooldown := "-"
		if p.CooldownLeftSeconds > 0 {
			cooldown = (time.Duration(p.CooldownLeftSeconds * float64(time.Second))).Round(time.Second).String()
		}
		blocked := "-"
		if p.BlockedSeconds > 0 {
			blocked = (time.Duration(p.BlockedSeconds * float64(time.Second))).Round(100 * time.Millisecond).String()
		}
		last := p.LastErrorKind
		if last == "" {
			last = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%.1f%%\t%s\t%d/%d\t%s\t%s\t%s\t%s\n",
			p.Name, p.Type, p.State, cooldown, p.Score.Total, 100*p.Stats.SuccessRate, ms(p.Stats.P95Ms),
			p.InFlight, p.MaxConcurrency, left(p.RemainingRequests, p.RPMLimit), left(p.RemainingTokens, p.TPMLimit), blocked, last)
	}
	_ = tw.Flush()
}

func ms(v float64) string {
	if v <= 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + "ms"
}

func left(remaining, limit int64) string {
	if remaining < 0 || limit <= 0 {
		return "?"
	}
	return strconv.FormatInt(remaining, 10) + "/" + strconv.FormatInt(limit, 10)
}
