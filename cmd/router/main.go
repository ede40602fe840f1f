// Command router is llmrouter: an OpenAI-compatible reverse proxy that
// routes each request to a healthy LLM provider.
//
//	router [serve] [--config FILE]   serve (default: the embedded config)
//	router validate --config FILE    check a file, print the routing table
//	router status [--admin URL]      provider table of a running router
//	router version                   print the version
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"text/tabwriter"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return cmdServe(ctx, args, stderr)
	case "validate":
		return cmdValidate(args, stdout, stderr)
	case "status":
		return cmdStatus(ctx, args, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "llmrouter", versionString())
		return 0
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	}
	fmt.Fprintf(stderr, "router: unknown command %q\n", cmd)
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage:
  router [serve] [--config FILE]   serve the API and admin listeners (default: embedded config)
  router validate --config FILE    check a config file and print its routing table
  router status [--admin URL]      print the provider table of a running router
  router version                   print the version
`)
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

func configFlag(name string, args []string, stderr io.Writer) (string, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "config file (YAML); default: the embedded config")
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	if fs.NArg() > 0 {
		return "", fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return *path, nil
}

func cmdValidate(args []string, stdout, stderr io.Writer) int {
	path, err := configFlag("validate", args, stderr)
	if err != nil {
		return 2
	}
	cfg, err := loadConfig(path)
	if err != nil {
		fmt.Fprintln(stderr, "router validate:", err)
		return 1
	}
	src := path
	if src == "" {
		src = "embedded default"
	}
	fmt.Fprintf(stdout, "config %s is valid: %d providers, %d models\n\n", src, len(cfg.Providers), len(cfg.Models))
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tTIER\tPROVIDER\tTYPE\tPROVIDER MODEL")
	types := map[string]string{}
	for _, p := range cfg.Providers {
		types[p.Name] = p.Type
	}
	models := cfg.Models
	sort.SliceStable(models, func(i, j int) bool { return models[i].Name < models[j].Name })
	for _, m := range models {
		targets := m.Targets
		sort.SliceStable(targets, func(i, j int) bool { return targets[i].Tier < targets[j].Tier })
		for _, t := range targets {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", m.Name, t.Tier, t.Provider, types[t.Provider], t.Model)
		}
	}
	_ = tw.Flush()
	return 0
}

func newLogger(w io.Writer, level, format string) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lv}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
