package providertest

import (
	"errors"
	"testing"
)

// As returns the first error in err's chain that is an E (errors.As), and
// fails tb at once when there is none (err nil included).
func As[E error](tb testing.TB, err error) E {
	tb.Helper()
	var target E
	if !errors.As(err, &target) {
		tb.Fatalf("got error %v (%T), want a %T in its chain", err, err, target)
	}
	return target
}
