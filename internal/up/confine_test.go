//go:build linux

package up

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/host/sandbox"
	"github.com/agentforeman/foreman/internal/testkit/fulldisk"
)

// As root, each agent runs as a uid of its own, which must pass every
// directory above its workspace: one that lets no other user in is
// refused before anything starts, naming each and the remedy, and its
// mode is left as it was.
func TestAgentsRootBehindAClosedDirectoryIsRefused(t *testing.T) {
	if os.Geteuid() != 0 || !sandbox.HasCap(unix.CAP_SYS_ADMIN) {
		t.Skip("the agents run as uids of their own where foreman is root")
	}
	if _, _, err := sandbox.Landlock(); err != nil {
		t.Skipf("no Landlock here: %v", err)
	}
	base := t.TempDir()
	for d := base; d != "/" && d != filepath.Clean(os.TempDir()); d = filepath.Dir(d) {
		require.NoError(t, os.Chmod(d, 0o711))
	}
	state := filepath.Join(base, "shop", ".foreman")
	require.NoError(t, os.MkdirAll(state, 0o700))
	require.NoError(t, os.Chmod(filepath.Dir(state), 0o711)) // the project: others enter
	c := &config.Config{File: filepath.Join(base, "shop", "foreman.yaml")}
	_, err := confine(c, filepath.Join(state, "agents"), os.Args[0], "")
	require.Error(t, err)
	assert.Equal(t, "host.sandbox: "+state+" lets no other user enter, and foreman runs as root, so each agent as a uid of its own that must pass it to reach its workspace under "+
		state+"; chmod o+x "+state+" (that lists nothing to others), or set host.sandbox: off to run the agents unconfined", err.Error())
	fi, err := os.Stat(state)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "not chmodded")

	require.NoError(t, os.Chmod(state, 0o711))
	box, err := confine(c, filepath.Join(state, "agents"), os.Args[0], "")
	require.NoError(t, err)
	assert.NotNil(t, box.launch)
	assert.Equal(t, filepath.Join(state, "agents-bin", "foreman"), box.program, "a copy of foreman its agents may run")
	fi, err = os.Stat(box.program)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm())

	c.Host.Unconfined = true
	box, err = confine(c, filepath.Join(state, "agents"), os.Args[0], "")
	require.NoError(t, err)
	assert.Nil(t, box.launch, "host.sandbox off: the plain launcher")
	assert.Contains(t, box.said, "host.sandbox is off: the agents run unconfined")
}

// The copy of foreman the confined agents run is made at each start,
// before their clones: a disk it fills stops up there, in one line saying
// so and where to free space, and leaves no half copy.
func TestAFullDiskStopsTheAgentsCopyOfForeman(t *testing.T) {
	if os.Geteuid() != 0 || !sandbox.HasCap(unix.CAP_SYS_ADMIN) {
		t.Skip("a full disk is a tmpfs of the test's own, which root mounts")
	}
	if _, _, err := sandbox.Landlock(); err != nil {
		t.Skipf("no Landlock here: %v", err)
	}
	disk := fulldisk.Mount(t, 1<<20) // far less than foreman
	for d := filepath.Dir(disk); d != "/" && d != filepath.Clean(os.TempDir()); d = filepath.Dir(d) {
		require.NoError(t, os.Chmod(d, 0o711)) // the agents' uids pass
	}
	bin := filepath.Join(disk, "agents-bin")
	_, err := confine(&config.Config{File: filepath.Join(disk, "foreman.yaml")}, filepath.Join(disk, "agents"), os.Args[0], "")
	require.Error(t, err)
	assert.Regexp(t, "^foreman's program for its agents: the disk is full \\(write "+regexp.QuoteMeta(bin)+"/\\.foreman-[0-9]+: no space left on device\\); "+
		"free space on the disk of "+regexp.QuoteMeta(bin)+", then start foreman up again$", err.Error())
	entries, err := os.ReadDir(bin)
	require.NoError(t, err)
	assert.Empty(t, entries, "no half copy")
}

func TestTheAgentsFindTheirCopyOfForemanFirst(t *testing.T) {
	assert.Equal(t, []string{"HOME=/h", "PATH=/bin-copy:/usr/bin:/bin"}, withPath([]string{"PATH=/x", "HOME=/h", "PATH=/usr/bin:/bin"}, "/bin-copy"))
	assert.Equal(t, []string{"PATH=/bin-copy"}, withPath(nil, "/bin-copy"))
}
