// Package chaos tests foreman under faults: the bot killed with SIGKILL at
// random points, the room's server restarted, floods and bad input. The
// short form runs in `make test`; `make chaos` sets CHAOS=full for
// the long one.
package chaos

import (
	"os"
	"strconv"
	"testing"

	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// foremanBin is the foreman binary the tests run and kill.
var foremanBin string

func TestMain(m *testing.M) { roomtest.RunWithForeman(m, &foremanBin) }

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
