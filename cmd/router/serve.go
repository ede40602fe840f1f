package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/llmrouter/llmrouter/internal/config"
	"github.com/llmrouter/llmrouter/internal/daemon"
)

// cmdServe starts the daemon (internal/daemon) on the config and runs it
// until ctx ends or a signal stops it: SIGHUP reloads, SIGTERM and SIGINT
// drain and exit.
func cmdServe(ctx context.Context, args []string, stderr io.Writer) int {
	path, err := configFlag("serve", args, stderr)
	if err != nil {
		return 2
	}
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Fprintln(stderr, "router:", err)
		return 1
	}
	log := newLogger(stderr, cfg.Log.Level, cfg.Log.Format)
	d, err := daemon.Start(cfg, path, log, daemon.Options{Types: providerTypes, Version: version})
	if err != nil {
		log.Error("starting", "error", err.Error())
		return 1
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	for {
		select {
		case <-ctx.Done():
			return d.Shutdown()
		case s := <-sigs:
			if s == syscall.SIGHUP {
				d.Reload()
				continue
			}
			log.Info("shutting down", "signal", s.String())
			return d.Shutdown()
		}
	}
}
