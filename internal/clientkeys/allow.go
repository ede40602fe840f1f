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
