package daemon

import (
	"context"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// reloadDebounce coalesces the burst of events one save produces (editors
// write, rename and chmod; Kubernetes swaps a ..data symlink).
const reloadDebounce = 250 * time.Millisecond

// watchConfig reloads when the config file changes, until ctx ends. It
// watches the file's directory, not the file: editors and Kubernetes
// ConfigMap updates replace the file rather than write it in place.
func (d *Daemon) watchConfig(ctx context.Context) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		d.log.Warn("config file watching is off; reload with SIGHUP", "error", err.Error())
		return
	}
	defer w.Close()
	dir, base := filepath.Split(d.cfgPath)
	if dir == "" {
		dir = "."
	}
	if err := w.Add(dir); err != nil {
		d.log.Warn("config file watching is off; reload with SIGHUP", "error", err.Error())
		return
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if name := filepath.Base(ev.Name); name == base || name == "..data" {
				timer.Reset(reloadDebounce)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			d.log.Warn("config file watch error", "error", err.Error())
		case <-timer.C:
			d.Reload()
		}
	}
}
