package roomtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RunWithForeman builds the foreman binary once for a test package whose
// tests run it as a child process (it cannot be the test binary, which does
// not know `foreman run`), runs the tests, and exits. Call it from TestMain;
// the binary's path is stored in *bin.
func RunWithForeman(m *testing.M, bin *string) {
	dir, err := os.MkdirTemp("", "foreman-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*bin = filepath.Join(dir, "foreman")
	build := exec.Command("go", "build", "-o", *bin, "github.com/agentforeman/foreman/cmd/foreman")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building foreman:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
