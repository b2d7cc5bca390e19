// Package chaos tests foreman under faults: the bot killed with SIGKILL at
// random points, the room's server restarted, floods and bad input. The
// short form runs in `make test`; `make chaos` sets CHAOS=full for
// the long one.
package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// foremanBin is the foreman binary the tests run and kill.
var foremanBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "foreman-chaos-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	foremanBin = filepath.Join(dir, "foreman")
	build := exec.Command("go", "build", "-o", foremanBin, "github.com/agentforeman/foreman/cmd/foreman")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building foreman:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// full reports whether the long form was asked for (make chaos).
func full() bool { return os.Getenv("CHAOS") == "full" }

// scale picks the short or the long form of a count, or the value of the
// environment variable name when set.
func scale(name string, short, long int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	if full() {
		return long
	}
	return short
}
