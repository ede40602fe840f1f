package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/llmrouter/llmrouter/internal/config"
	"github.com/llmrouter/llmrouter/internal/daemon"
	"github.com/llmrouter/llmrouter/internal/provider"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// command is one subcommand as help shows it.
type command struct {
	name, args, summary string
	// flags returns a new flag set of the command; nil for none.
	flags func() *flag.FlagSet
}

var commands = []command{
	{"serve", "[--config FILE]", "serve the API and admin listeners (the default command)",
		func() *flag.FlagSet { fs, _ := configFlags("serve"); return fs }},
	{"validate", "[--config FILE] [--credentials]", "build everything serve builds except listeners; print every problem, or the routing table",
		func() *flag.FlagSet { fs, _, _ := validateFlags(); return fs }},
	{"status", "[--admin URL] [--admin-token-env VAR]", "print the provider table of a running router",
		func() *flag.FlagSet { fs, _, _ := statusFlags(); return fs }},
	{"keys", "[--admin URL] [--admin-token-env VAR]", "print the client key table of a running router: spend this period, budget, RPM/TPM in use",
		func() *flag.FlagSet { fs, _, _ := statusFlags(); return fs }},
	{"enable", "[--admin URL] [--admin-token-env VAR] PROVIDER", "lift a provider's quota block and disabled targets in a running router",
		func() *flag.FlagSet { fs, _, _ := statusFlags(); return fs }},
	{"version", "", "print the version", nil},
	{"help", "[COMMAND]", "print this help, or one command's", nil},
}

func lookupCommand(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	named := len(args) > 0 && !strings.HasPrefix(args[0], "-")
	cmd := "serve"
	if named {
		cmd, args = args[0], args[1:]
	}
	c := lookupCommand(cmd)
	if c == nil {
		fmt.Fprintf(stderr, "router: unknown command %q\n\n", cmd)
		usage(stderr)
		return 2
	}
	if asksHelp(c, args) {
		if named {
			commandUsage(stdout, c)
		} else {
			usage(stdout) // router -h, router --help
		}
		return 0
	}
	switch cmd {
	case "serve":
		return cmdServe(ctx, args, stderr)
	case "validate":
		return cmdValidate(args, stdout, stderr)
	case "status":
		return cmdStatus(ctx, args, stdout, stderr)
	case "keys":
		return cmdKeys(ctx, args, stdout, stderr)
	case "enable":
		return cmdEnable(ctx, args, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "llmrouter", versionString())
		return 0
	}
	// help
	if len(args) == 0 {
		usage(stdout)
		return 0
	}
	if c := lookupCommand(args[0]); c != nil {
		commandUsage(stdout, c)
		return 0
	}
	fmt.Fprintf(stderr, "router help: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

// asksHelp reports whether args ask for c's help: -h, -help or --help
// where c's flags would read a flag.
func asksHelp(c *command, args []string) bool {
	if c.flags == nil {
		return slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "-help" || a == "--help" })
	}
	fs := c.flags()
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return errors.Is(fs.Parse(args), flag.ErrHelp)
}

func usage(w io.Writer) {
	fmt.Fprint(w, "llmrouter routes OpenAI-compatible requests to healthy LLM providers.\n\n")
	fmt.Fprint(w, "usage: router [COMMAND] [FLAGS]\n\ncommands:\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "  %s %s\t%s\n", c.name, c.args, c.summary)
	}
	_ = tw.Flush()

	// Flags, each with the commands that take it, read from the flag sets
	// themselves so that help cannot drift from them.
	type entry struct {
		f    *flag.Flag
		cmds []string
	}
	var flags []*entry
	for _, c := range commands {
		if c.flags == nil {
			continue
		}
		c.flags().VisitAll(func(f *flag.Flag) {
			for _, e := range flags {
				if e.f.Name == f.Name {
					e.cmds = append(e.cmds, c.name)
					return
				}
			}
			flags = append(flags, &entry{f, []string{c.name}})
		})
	}
	fmt.Fprint(w, "\nflags:\n")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, e := range flags {
		arg, text := flag.UnquoteUsage(e.f)
		if e.f.DefValue != "" {
			text += fmt.Sprintf(" (default %q)", e.f.DefValue)
		}
		fmt.Fprintf(tw, "  --%s %s\t%s: %s\n", e.f.Name, arg, strings.Join(e.cmds, ", "), text)
	}
	fmt.Fprintf(tw, "  -h, --help\tevery command: its help\n")
	_ = tw.Flush()
	fmt.Fprintf(w, `
environment:
  %s_<KEY> overrides a config key, with "_" for "." (%s_LISTEN=0.0.0.0:8080,
  %s_LIMITS_REQUEST_TIMEOUT=60s); an unknown %s_ variable (one that overrides no key) is a warning.
  Provider and client keys come from the variables the config names (api_key_env,
  auth.api_keys_env); the config reference is docs/CONFIG.md.
`, config.EnvPrefix, config.EnvPrefix, config.EnvPrefix, config.EnvPrefix)
}

// commandUsage prints one command's help.
func commandUsage(w io.Writer, c *command) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n", strings.TrimSpace("router "+c.name+" "+c.args), c.summary)
	if c.flags == nil {
		return
	}
	fs := c.flags()
	fs.SetOutput(w)
	fmt.Fprint(w, "\nflags:\n")
	fs.PrintDefaults()
}

func versionString() string {
	v := version
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " (" + s.Value[:12] + ")"
			}
		}
		v += " " + bi.GoVersion
	}
	return v
}

// configFlags returns the flag set of serve or validate and its --config.
func configFlags(name string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	path := fs.String("config", "", "the config `FILE`: YAML, or JSON when it ends in .json; none: the embedded default (simulated providers)")
	return fs, path
}

// validateFlags returns validate's flag set, its --config and its
// --credentials.
func validateFlags() (*flag.FlagSet, *string, *bool) {
	fs, path := configFlags("validate")
	creds := fs.Bool("credentials", false, "also find the cloud credentials of each bedrock and vertex provider as its first request would "+
		"(files, STS, metadata servers: I/O that validate does not do otherwise) and print where they came from, never what they are")
	return fs, path, creds
}

// configFlag parses serve's or validate's flags; a bad flag is reported
// on stderr with the command's help.
func configFlag(name string, args []string, stderr io.Writer) (string, error) {
	fs, path := configFlags(name)
	return *path, parseFlags(fs, name, args, stderr)
}

// parseFlags parses args into fs; a bad flag is reported on stderr with
// the command's help.
func parseFlags(fs *flag.FlagSet, name string, args []string, stderr io.Writer) error {
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr); commandUsage(stderr, lookupCommand(name)) }
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("unexpected argument %q", fs.Arg(0))
		fmt.Fprintf(stderr, "router %s: %v\n", name, err)
		return err
	}
	return nil
}

// cmdValidate builds everything serve builds, with the same functions,
// except the listeners: the config, every provider's key and adapter, the
// route table and the proxy. It prints every problem, one per line, each
// naming its key, or the routing table; with --credentials, then where
// each cloud provider's credentials come from (credentialSources).
func cmdValidate(args []string, stdout, stderr io.Writer) int {
	fs, pathFlag, withCreds := validateFlags()
	if err := parseFlags(fs, "validate", args, stderr); err != nil {
		return 2
	}
	path := *pathFlag
	src := daemon.Source(path)
	log := slog.New(&warnings{w: stderr})
	cfg, err := config.Check(path)
	if cfg == nil {
		fmt.Fprintln(stderr, "router validate:", err)
		return 1
	}
	problems := lines(err)
	opts, err := daemon.Build(cfg, providerTypes, log)
	problems = append(problems, lines(err)...)
	if len(problems) == 0 {
		problems = append(problems, lines(daemon.Check(cfg, opts))...)
	}
	if len(problems) > 0 {
		problems = dedupe(problems)
		slices.SortStableFunc(problems, func(a, b string) int { return strings.Compare(sortKey(a), sortKey(b)) })
		fmt.Fprintf(stderr, "router validate: config %s has %d problem%s:\n", src, len(problems), plural(len(problems)))
		for _, p := range problems {
			fmt.Fprintln(stderr, "  "+p)
		}
		return 1
	}
	fmt.Fprintf(stdout, "config %s is valid: %d providers, %d models\n\n", src, len(cfg.Providers), len(cfg.Models))
	daemon.WriteTable(stdout, cfg)
	if *withCreds {
		return credentialSources(opts.Providers, stdout, stderr)
	}
	return 0
}

// credentialTimeout bounds the search for one provider's credentials.
const credentialTimeout = 20 * time.Second

// credentialSources finds the credentials of every provider whose adapter
// takes its cloud's own (provider.CredentialFinder), one after the other,
// and prints where each came from; a provider that has none is a problem
// on stderr and the exit code is 1.
func credentialSources(providers []provider.Descriptor, stdout, stderr io.Writer) int {
	code := 0
	var tw *tabwriter.Writer
	for _, p := range providers {
		f, ok := p.Adapter.(provider.CredentialFinder)
		if !ok {
			continue
		}
		if tw == nil {
			tw = tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "\nPROVIDER\tTYPE\tCREDENTIALS")
		}
		ctx, cancel := context.WithTimeout(context.Background(), credentialTimeout)
		src, err := f.FindCredentials(ctx)
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "router validate: provider %s: no credentials: %v\n", p.Name, err)
			fmt.Fprintf(tw, "%s\t%s\tnone (see above)\n", p.Name, p.Type)
			code = 1
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Name, p.Type, src)
	}
	if tw != nil {
		_ = tw.Flush()
	}
	return code
}

// lines returns the problems err joins, one per line.
func lines(err error) []string {
	if err == nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// dedupe drops repeated problems (the config and the route table both
// reject a duplicate model), keeping the first of each.
func dedupe(problems []string) []string {
	seen := make(map[string]bool, len(problems))
	out := problems[:0]
	for _, p := range problems {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// sortKey orders problems by the key they name, entries by index
// (providers[2] before providers[10]), so that an entry's problems stand
// together.
func sortKey(problem string) string {
	key, _, _ := strings.Cut(strings.TrimPrefix(problem, "unknown key "), ": ")
	var b strings.Builder
	for len(key) > 0 {
		i := strings.IndexAny(key, "0123456789")
		if i < 0 {
			b.WriteString(key)
			break
		}
		b.WriteString(key[:i])
		j := i
		for j < len(key) && key[j] >= '0' && key[j] <= '9' {
			j++
		}
		fmt.Fprintf(&b, "%09s", key[i:j])
		key = key[j:]
	}
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// warnings is the log of router validate: warnings and errors, one line
// each, "router validate: warning: MESSAGE (key=value, ...)".
type warnings struct {
	w     io.Writer
	attrs []slog.Attr
}

func (h *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *warnings) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	level := "warning"
	if r.Level >= slog.LevelError {
		level = "error"
	}
	fmt.Fprintf(&b, "router validate: %s: %s", level, r.Message)
	sep := " ("
	attr := func(a slog.Attr) bool {
		fmt.Fprintf(&b, "%s%s=%s", sep, a.Key, a.Value)
		sep = ", "
		return true
	}
	for _, a := range h.attrs {
		attr(a)
	}
	r.Attrs(attr)
	if sep == ", " {
		b.WriteByte(')')
	}
	b.WriteByte('\n')
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *warnings) WithAttrs(as []slog.Attr) slog.Handler {
	return &warnings{w: h.w, attrs: append(slices.Clip(h.attrs), as...)}
}

func (h *warnings) WithGroup(string) slog.Handler { return h }

func newLogger(w io.Writer, level, format string) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lv}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
