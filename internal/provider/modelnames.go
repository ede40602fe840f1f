package provider

import (
	"maps"
	"strings"
	"sync"
	"sync/atomic"
)

// Bounds of a ModelNames table: a provider that names a new model in
// every answer (or very long ones) costs an allocation per answer past
// them, never unbounded memory.
const (
	maxModelNames   = 64
	maxModelNameLen = 256
)

// ModelNames turns the model name a provider reported in its answer
// (gen_ai.response.model: OpenAI's "model", Anthropic's message model,
// Gemini's modelVersion), read as a view into the answer's bytes, into a
// string that outlives them, without an allocation once the name was seen:
// a provider names the same few models again and again.
//
// Reads are lock-free, a map behind an atomic pointer; the rare write (a
// name not seen yet) copies the map under mu. It holds at most 64 names
// of at most 256 bytes; past that a new name is copied on each call. The
// zero value is an empty table, safe for concurrent use.
type ModelNames struct {
	mu    sync.Mutex                        // serializes writers of names
	names atomic.Pointer[map[string]string] // never modified once stored
}

// Name returns reported as a string the caller may keep: "" when reported
// is "" (the answer named no model), target itself when reported equals it,
// else the table's copy. reported may view bytes that change later: Name
// keeps no reference to it.
func (t *ModelNames) Name(reported, target string) string {
	switch {
	case reported == "":
		return ""
	case reported == target:
		return target
	}
	if m := t.names.Load(); m != nil {
		if s, ok := (*m)[reported]; ok {
			return s
		}
	}
	return t.add(reported)
}

// add copies reported into the table while there is room.
func (t *ModelNames) add(reported string) string {
	s := strings.Clone(reported)
	if len(s) > maxModelNameLen {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.names.Load()
	if old != nil {
		if kept, ok := (*old)[s]; ok {
			return kept // another writer was first
		}
		if len(*old) >= maxModelNames {
			return s
		}
	}
	m := map[string]string{}
	if old != nil {
		m = maps.Clone(*old)
	}
	m[s] = s
	t.names.Store(&m)
	return s
}
