package offtargets

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"
)

// Set is one provider's disabled targets. The zero Set has none and is
// ready to use.
type Set struct {
	mu  sync.Mutex        // guards off
	off map[string]string // model → the provider's message
	n   atomic.Int32      // len(off), for lock-free reads on the hot path
}

// Disable turns model off with the provider's message; it reports whether
// the model was on.
func (s *Set) Disable(model, message string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, off := s.off[model]; off {
		return false
	}
	if s.off == nil {
		s.off = make(map[string]string)
	}
	s.off[model] = message
	s.n.Store(int32(len(s.off)))
	return true
}

// Off reports whether model is disabled; without a lock when none is.
func (s *Set) Off(model string) bool {
	if s.n.Load() == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, off := s.off[model]
	return off
}

// Len is how many targets are disabled, without a lock.
func (s *Set) Len() int { return int(s.n.Load()) }

// Lift enables every target and returns the models it enabled, sorted.
func (s *Set) Lift() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	models := slices.Sorted(maps.Keys(s.off))
	s.off = nil
	s.n.Store(0)
	return models
}

// Models are the disabled models, sorted.
func (s *Set) Models() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.off))
}

// Messages is a copy of the disabled models and their messages, each
// message passed through f (a redaction); nil when none is disabled.
func (s *Set) Messages(f func(string) string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.off) == 0 {
		return nil
	}
	out := make(map[string]string, len(s.off))
	for m, msg := range s.off {
		out[m] = f(msg)
	}
	return out
}

// Add disables the models of m that keep says to keep (nil keeps all),
// beside those already disabled: a restore of a saved set.
func (s *Set) Add(m map[string]string, keep func(model string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for model, msg := range m {
		if keep != nil && !keep(model) {
			continue
		}
		if s.off == nil {
			s.off = make(map[string]string, len(m))
		}
		s.off[model] = msg
	}
	s.n.Store(int32(len(s.off)))
}

// Replace makes the set a copy of m: a mirror of another view of it.
func (s *Set) Replace(m map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.off = maps.Clone(m)
	s.n.Store(int32(len(s.off)))
}
