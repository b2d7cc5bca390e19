package agents

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/testkit/fulldisk"
	"github.com/agentforeman/foreman/internal/testkit/gittest"
)

// A clone that fills the disk, in copying its objects or in checking
// them out, is refused in one line naming the agent, that the disk is
// full and where to free space; it leaves nothing that looks like a
// clone (git leaves a checkout that failed: the next start would take
// it), and once space is freed the next start clones.
func TestCloneOnAFullDisk(t *testing.T) {
	const blob = 2 << 20
	repo := gitRepo(t)
	big := gittest.CommitRandom(t, repo, "big", blob)
	for _, tc := range []struct {
		name  string
		leave int64 // free on the disk
	}{
		{"copying its objects", blob / 2},
		{"checking it out", blob * 3 / 2}, // its objects fit, its files not
	} {
		t.Run(tc.name, func(t *testing.T) {
			disk := fulldisk.Mount(t, 4*blob)
			filler := fulldisk.Fill(t, disk, tc.leave)
			root := filepath.Join(disk, "agents")
			dir := filepath.Join(root, "b1")
			_, err := MakeWorkspace(context.Background(), root, "b1", repo, "main")
			require.Error(t, err)
			msg := err.Error()
			assert.True(t, strings.HasPrefix(msg, "agent b1: cannot clone host.repo "+repo+" (branch main) into its workspace: the disk is full (git: "), msg)
			assert.True(t, strings.HasSuffix(msg, "); free space where its workspace is, at "+dir+", then start foreman up again"), msg)
			assert.Contains(t, msg, "(git: fatal: ", "the line that says why, not its advice on retrying in the clone")
			assert.NotContains(t, msg, "\n")
			assert.NoDirExists(t, filepath.Join(dir, "work"))
			assert.NoDirExists(t, filepath.Join(dir, "work.part"))

			require.NoError(t, os.Remove(filler)) // space freed
			w, err := MakeWorkspace(context.Background(), root, "b1", repo, "main")
			require.NoError(t, err)
			b, err := os.ReadFile(filepath.Join(w.Work, "big"))
			require.NoError(t, err)
			assert.Equal(t, big, b)
		})
	}
}

// A clone that failed is blamed on the disk when git says so (its space,
// or its quota), or when the disk has not a MiB left: a few KiB free, as
// a busy disk may have again by the time it is asked, is still full. With
// the space back, a failure is not the disk's, and the probe is gone.
func TestAFullDiskIsAskedNotGuessed(t *testing.T) {
	checkout := "error: unable to write file big\nfatal: unable to checkout working tree"
	assert.True(t, noSpace("error: unable to create temporary file: Disk quota exceeded", t.TempDir()), "over a quota")
	assert.False(t, noSpace(checkout, t.TempDir()))

	disk := fulldisk.Mount(t, 8<<20)
	filler := fulldisk.Fill(t, disk, 64<<10)
	require.NotZero(t, fulldisk.Free(t, disk), "a few KiB free")
	assert.True(t, noSpace(checkout, disk), "a disk with %d bytes free is full", fulldisk.Free(t, disk))
	require.NoError(t, os.Remove(filler))
	free := fulldisk.Free(t, disk)
	assert.False(t, noSpace(checkout, disk))
	left, err := os.ReadDir(disk)
	require.NoError(t, err)
	assert.Empty(t, left, "the probe is removed")
	assert.Equal(t, free, fulldisk.Free(t, disk))
}
