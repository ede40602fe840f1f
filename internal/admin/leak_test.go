package admin

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them (an
// event stream left running after its client or its server went away).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
