package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/llmrouter/llmrouter/internal/statefile"
	"github.com/llmrouter/llmrouter/internal/warm"
)

// stateSaveInterval is how often learned state is saved to state_file.
const stateSaveInterval = 30 * time.Second

// stateSaveDelay is how soon after a change worth keeping (a breaker
// transition, a rate-limit block, a quota block or lift, a target disabled
// or enabled) the state is saved: long enough to gather the changes one
// failure brings (a trip and a block) into one write, short enough that a
// router killed a second later finds them on restart
// (docs/ARCHITECTURE.md, "Warm restart").
const stateSaveDelay = 250 * time.Millisecond

// restoreState loads state_file, if set; trouble is a warning and a fresh
// start, never a failure.
func (d *Daemon) restoreState() {
	path := d.cfg.Load().StateFile
	if path == "" {
		return
	}
	var raw json.RawMessage
	err := statefile.Load(path, &raw)
	var st warm.State
	if err == nil {
		st, err = warm.Decode(raw)
	}
	var r warm.Restored
	now := time.Now()
	if err == nil {
		r, err = warm.Restore(d.routes, now, st)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		d.log.Info("no state file yet; starting fresh", "state_file", path)
		return
	case err != nil:
		d.log.Warn("ignoring state file; starting fresh", "state_file", path, "error", err.Error())
		return
	}
	for _, name := range slices.Sorted(maps.Keys(r.Fresh)) {
		d.log.Info("provider starts fresh: its configuration changed since the state was saved",
			"provider", name, "reason", r.Fresh[name].Error())
	}
	attrs := []any{"state_file", path, "providers", len(r.Providers), "version", st.Version}
	if len(r.Keys) > 0 {
		attrs = append(attrs, "keys", len(r.Keys)) // client keys whose spend this period was restored
	}
	if !st.SavedAt.IsZero() { // version 1 did not say
		attrs = append(attrs, "saved_ago", now.Round(0).Sub(st.SavedAt).Round(time.Millisecond).String(), "writer", st.Writer)
	}
	d.log.Info("restored learned state", attrs...)
}

// saveState writes learned state to state_file, if set. Two routers on
// one file do not corrupt it (each save replaces it whole, atomically);
// the newest save wins, and a router that finds the file replaced by
// someone else since its own last save says so.
func (d *Daemon) saveState() {
	path := d.cfg.Load().StateFile
	if path == "" {
		return
	}
	if prev := d.savedFile; prev != nil {
		if cur, err := os.Stat(path); err == nil && !sameSave(prev, cur) {
			d.otherWriter.Do(func() {
				d.log.Warn("the state file was replaced by another process since this router's last save: "+
					"routers sharing a state_file overwrite each other's state (the newest save wins); give each its own file",
					"state_file", path)
			})
		}
	}
	st := warm.Export(d.routes, time.Now())
	st.Writer = d.stateWriter
	if err := statefile.Save(path, st); err != nil {
		d.log.Warn("saving state file failed", "state_file", path, "error", err.Error())
		return
	}
	d.savedFile, _ = os.Stat(path)
}

// sameSave reports whether cur is still the file a save of ours left
// (the same inode, time and size: an inode can be reused).
func sameSave(ours, cur os.FileInfo) bool {
	return os.SameFile(ours, cur) && ours.ModTime().Equal(cur.ModTime()) && ours.Size() == cur.Size()
}

// saveStateLoop saves every stateSaveInterval, and stateSaveDelay after
// a change worth keeping, until ctx ends.
func (d *Daemon) saveStateLoop(ctx context.Context) {
	t := time.NewTicker(stateSaveInterval)
	defer t.Stop()
	soon := time.NewTimer(stateSaveDelay)
	soon.Stop()
	defer soon.Stop()
	changed := d.routes.StateChanged()
	pending := false // soon is armed
	for {
		var due <-chan time.Time
		if pending {
			due = soon.C
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
			if !pending {
				soon.Reset(stateSaveDelay)
				pending = true
			}
		case <-due:
			pending = false
			d.saveState()
		case <-t.C:
			soon.Stop()
			pending = false
			d.saveState()
		}
	}
}
