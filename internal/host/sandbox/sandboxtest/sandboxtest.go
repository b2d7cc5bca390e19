// Package sandboxtest makes sandboxes for tests.
package sandboxtest

import (
	"os"
	"testing"

	"github.com/agentforeman/foreman/internal/host/sandbox"
)

// Require is the variable that makes a machine without a sandbox a test
// failure rather than a skip (CI sets it).
const Require = "FOREMANTEST_REQUIRE_SANDBOX"

// New makes a sandbox, or skips the test where this machine cannot
// (inside a sandboxed check, whose Landlock forbids mounting; a kernel
// without Landlock; not Linux), unless Require is set. c.Home defaults to
// an empty directory of the test's.
func New(t testing.TB, c sandbox.Config) *sandbox.Sandbox {
	t.Helper()
	if c.Home == "" {
		c.Home = t.TempDir()
	}
	s, err := sandbox.New(c)
	if err != nil {
		if os.Getenv(Require) != "" {
			t.Fatalf("no sandbox on this machine: %v", err)
		}
		t.Skipf("no sandbox on this machine: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}
