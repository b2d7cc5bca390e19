//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two sandboxes of one process (a worker makes one per set of limits)
// make their checks' cgroups side by side: no name of one is the other's.
func TestTwoSandboxesOfOneProcessMakeCgroupsApart(t *testing.T) {
	a := newSandbox(t, Config{})
	b := newSandbox(t, Config{Limits: Limits{Memory: 1 << 30}})
	if a.cg == nil || b.cg == nil {
		t.Skip("no cgroups here")
	}
	ca, err := a.cg.make(a.c.Limits)
	require.NoError(t, err)
	defer ca.remove()
	cb, err := b.cg.make(b.c.Limits)
	require.NoError(t, err, "the second sandbox's first cgroup")
	defer cb.remove()
	require.NotEqual(t, ca.memory, cb.memory)
}

// A cgroup that cannot be made when a check starts (the host's own
// removed, or out of room, since the host made one at its start): the
// check does not run, and the line says which cgroup and what to do.
func TestACgroupThatCannotBeMade(t *testing.T) {
	s := newSandbox(t, Config{})
	if s.cg == nil {
		t.Skip("no cgroups here")
	}
	gone := filepath.Join(t.TempDir(), "gone")
	s.cg.memory, s.cg.pids = gone, ""
	r := box(t)
	cmd := exec.Command("/bin/true")
	cmd.Dir = r.Worktree
	_, err := s.Command(cmd, r)
	require.Error(t, err)
	assert.Regexp(t, `^making the check's cgroup `+regexp.QuoteMeta(gone)+`/foreman-check-\d+-\d+: .*: the check did not run; see that the host's cgroup `+regexp.QuoteMeta(gone)+` is still there with room for a child, or restart the host, or set host.sandbox_memory: watcher \(weaker\)$`, err.Error())
	assert.NotContains(t, err.Error(), "\n")
}

// A check's cgroup holds it to its memory with no way out through swap
// (memsw at the same limit, or swappiness 0 where swap is not accounted;
// v2: swap.max 0) and to its processes (pids.max).
func TestACheckCgroupHasNoWayOutThroughSwap(t *testing.T) {
	s := newSandbox(t, Config{})
	if s.cg == nil {
		t.Skip("no cgroups here")
	}
	l := Limits{Memory: 64 << 20, Tasks: 77}.WithDefaults()
	c, err := s.cg.make(l)
	require.NoError(t, err)
	defer c.remove()
	read := func(dir, file string) string {
		data, err := os.ReadFile(filepath.Join(dir, file))
		require.NoError(t, err, file)
		return strings.TrimSpace(string(data))
	}
	if s.cg.v2 {
		assert.Equal(t, "67108864", read(c.memory, "memory.max"))
		if exists(filepath.Join(c.memory, "memory.swap.max")) {
			assert.Equal(t, "0", read(c.memory, "memory.swap.max"))
		}
		assert.Equal(t, "77", read(c.memory, "pids.max"))
		return
	}
	assert.Equal(t, "67108864", read(c.memory, "memory.limit_in_bytes"))
	if s.cg.swapKey != "" {
		assert.Equal(t, "67108864", read(c.memory, s.cg.swapKey), "memory and swap together at the limit")
	} else {
		assert.Equal(t, "0", read(c.memory, "memory.swappiness"))
	}
	if s.cg.pids != "" {
		assert.Equal(t, "77", read(c.pids, "pids.max"))
	}
}
