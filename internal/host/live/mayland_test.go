package live

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/config"
)

// The roles are checked again before every landing, always: those the
// file gives the host, and those a caller gave it in memory (foreman up),
// which a reload gives again, as foreman's own reload does.
func TestMayLandWatchesTheRolesAlways(t *testing.T) {
	const self = "@0123456789abcdef"
	path := filepath.Join(t.TempDir(), "foreman.yaml")
	write := func(merger, merge string) {
		require.NoError(t, os.WriteFile(path, []byte("roles:\n  ci: [\""+self+"\"]\n  merger: ["+merger+"]\nrules:\n  ci_gating: on\n  merge: "+merge+"\n"), 0o644))
	}
	write(`"`+self+`"`, "external")
	c, err := config.Load(path, nil, nil)
	require.NoError(t, err)
	check := mayLand(c, self)
	require.NotNil(t, check)
	assert.NoError(t, check())
	write("", "external")
	assert.ErrorContains(t, check(), "foreman.yaml has changed: roles.merger: does not list the host's id "+self)

	// Given in memory (foreman up): given again to what the file says now.
	c, err = config.Load(path, nil, nil)
	require.NoError(t, err)
	c.Roles.Merger = []string{self}
	check = mayLand(c, self)
	require.NotNil(t, check, "always on")
	assert.NoError(t, check())
	require.NoError(t, os.WriteFile(path, []byte("roles: [not a map\n"), 0o644))
	assert.ErrorContains(t, check(), "cannot read "+path+" again to check the roles before landing")

	// No file: the roles cannot change; checked as given.
	c.File = ""
	check = mayLand(c, self)
	require.NotNil(t, check)
	assert.NoError(t, check())
	c.Roles.Merger = nil
	assert.ErrorContains(t, check(), "roles.merger: does not list the host's id")
}
