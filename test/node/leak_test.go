package nodesdk

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them, and
// removes the router binary the tests built. (goleak's Cleanup replaces
// its os.Exit, so it exits itself.)
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		removeBuild()
		os.Exit(code)
	}))
}
