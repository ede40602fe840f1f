package clientkeys

import "strings"

// allowList is a key's `models`: exact names and prefixes (a name ending
// in `*`), as the model table reads its patterns. The zero value allows
// every model.
type allowList struct {
	all      bool
	exact    map[string]bool
	prefixes []string
}

func newAllowList(models []string) allowList {
	if len(models) == 0 {
		return allowList{all: true}
	}
	a := allowList{exact: make(map[string]bool, len(models))}
	for _, m := range models {
		if p, ok := strings.CutSuffix(m, "*"); ok {
			if p == "" {
				return allowList{all: true}
			}
			a.prefixes = append(a.prefixes, p)
			continue
		}
		a.exact[m] = true
	}
	return a
}

// allows reports whether the requested model name may be called.
func (a allowList) allows(model string) bool {
	if a.all || a.exact[model] {
		return true
	}
	for _, p := range a.prefixes {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return false
}

// lists reports whether a configured model name belongs in the key's
// model list (GET /v1/models): an exact name the key allows, or a pattern
// (`prefix*`) serving some name the key allows: an allowed exact name
// under the prefix, or an allowed prefix that overlaps it (one of the two
// prefixes begins the other).
func (a allowList) lists(name string) bool {
	prefix, pattern := strings.CutSuffix(name, "*")
	if !pattern || a.all {
		return a.allows(name)
	}
	for m := range a.exact {
		if strings.HasPrefix(m, prefix) {
			return true
		}
	}
	for _, p := range a.prefixes {
		if strings.HasPrefix(p, prefix) || strings.HasPrefix(prefix, p) {
			return true
		}
	}
	return false
}
