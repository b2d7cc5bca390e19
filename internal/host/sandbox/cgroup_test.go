//go:build linux

package sandbox

import (
	"testing"

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
