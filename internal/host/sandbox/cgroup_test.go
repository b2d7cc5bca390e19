//go:build linux

package sandbox

import (
	"os/exec"
	"path/filepath"
	"regexp"
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
