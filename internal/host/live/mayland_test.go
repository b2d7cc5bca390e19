package live

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/config"
)

// The roles watched before a landing are those the file gives the host; a
// caller that gives them in memory (the file does not list the host) is
// not second-guessed from the file.
func TestMayLandWatchesTheRolesTheFileGives(t *testing.T) {
	const self = "@0123456789abcdef"
	path := filepath.Join(t.TempDir(), "foreman.yaml")
	write := func(merger string) {
		require.NoError(t, os.WriteFile(path, []byte("roles:\n  ci: [\""+self+"\"]\n  merger: ["+merger+"]\nrules:\n  ci_gating: on\n  merge: external\n"), 0o644))
	}
	write(`"` + self + `"`)
	c, err := config.Load(path, nil, nil)
	require.NoError(t, err)
	check := mayLand(c, self)
	require.NotNil(t, check)
	assert.NoError(t, check())
	write("")
	assert.ErrorContains(t, check(), "foreman.yaml has changed: roles.merger: does not list the host's id "+self)

	// Given in memory only: nothing to watch in the file.
	c, err = config.Load(path, nil, nil)
	require.NoError(t, err)
	c.Roles.Merger = []string{self}
	assert.Nil(t, mayLand(c, self))
	c.File = ""
	assert.Nil(t, mayLand(c, self))
}
