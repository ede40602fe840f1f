package h1server

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them (the
// watcher's among them: it ends with the server).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
