package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/llmrouter/llmrouter/internal/admin"
)

// cmdStatus prints the provider table from a running router's
// /admin/providers.
func cmdStatus(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var body struct {
		Providers []admin.ProviderStatus `json:"providers"`
	}
	if code := fetchAdmin(ctx, "status", "/admin/providers", args, &body, stderr); code != 0 {
		return code
	}
	printStatus(stdout, body.Providers)
	return 0
}

// cmdKeys prints the client key table from a running router's
// /admin/keys.
func cmdKeys(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var body struct {
		Keys []admin.KeyStatus `json:"keys"`
	}
	if code := fetchAdmin(ctx, "keys", "/admin/keys", args, &body, stderr); code != 0 {
		return code
	}
	printKeys(stdout, body.Keys)
	return 0
}

// fetchAdmin parses the command's flags (--admin) from args and decodes
// GET path of the admin listener into v; it returns the exit code, 0
// when v was read.
func fetchAdmin(ctx context.Context, name, path string, args []string, v any, stderr io.Writer) int {
	fs, adminURL, tokenEnv := statusFlags()
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr); commandUsage(stderr, lookupCommand(name)) }
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "router %s: unexpected argument %q\n", name, fs.Arg(0))
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	url := strings.TrimSuffix(*adminURL, "/") + path
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		fmt.Fprintf(stderr, "router %s: %v\n", name, err)
		return 2
	}
	withToken(req, *tokenEnv)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "router %s: asking the router: %v\n", name, err)
		return 1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "router %s: %s answered %s\n", name, url, resp.Status)
		return 1
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(v); err != nil {
		fmt.Fprintf(stderr, "router %s: reading the answer: %v\n", name, err)
		return 1
	}
	return 0
}

// cmdEnable asks a running router to lift a provider's quota block and
// disabled targets (POST /admin/providers/{name}/enable).
func cmdEnable(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, adminURL, tokenEnv := statusFlags()
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
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader("{}"))
	if err != nil {
		fmt.Fprintln(stderr, "router enable:", err)
		return 2
	}
	req.Header.Set("Content-Type", "application/json") // the admin listener takes no other for a change
	withToken(req, *tokenEnv)
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

// statusFlags returns status's flag set, its --admin and its
// --admin-token-env.
func statusFlags() (*flag.FlagSet, *string, *string) {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	admin := fs.String("admin", "http://127.0.0.1:9090", "the router's admin listener `URL`")
	tokenEnv := fs.String("admin-token-env", "LLMROUTER_ADMIN_TOKEN",
		"the `VARIABLE` holding the admin token, sent as a Bearer credential when set (the router's admin_token_env)")
	return fs, admin, tokenEnv
}

// withToken sends the admin token the variable env holds, if any.
func withToken(req *http.Request, env string) {
	if t := strings.TrimSpace(os.Getenv(env)); env != "" && t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	}
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

func printKeys(w io.Writer, ks []admin.KeyStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tPERIOD\tSPEND\tBUDGET\tREMAINING\tRESETS\tIN-FLIGHT\tRPM\tTPM\tMODELS")
	for _, k := range ks {
		budget, remaining := "-", "-"
		if k.BudgetUSD > 0 {
			budget = usd(k.BudgetUSD)
		}
		if k.RemainingUSD != nil {
			remaining = usd(*k.RemainingUSD)
		}
		resets := "never"
		if k.ResetsAt != nil {
			resets = k.ResetsAt.UTC().Format(time.RFC3339)
		}
		models := "*"
		if len(k.Models) > 0 {
			models = strings.Join(k.Models, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", k.Name, k.Period, usd(k.SpendUSD), budget, remaining, resets,
			k.InFlight, inUse(k.RPMInUse, k.RPM), inUse(k.TPMInUse, k.TPM), models)
	}
	_ = tw.Flush()
}

// usd formats dollars with cents, and to the micro-dollar below a cent.
func usd(v float64) string {
	if v != 0 && v < 0.01 && v > -0.01 {
		return "$" + strconv.FormatFloat(v, 'f', 6, 64)
	}
	return "$" + strconv.FormatFloat(v, 'f', 2, 64)
}

func inUse(used, limit int64) string {
	if limit <= 0 || used < 0 {
		return "-"
	}
	return strconv.FormatInt(used, 10) + "/" + strconv.FormatInt(limit, 10)
}
