//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Nothing a check writes is privileged: every way a program sets a setuid
// or setgid bit fails (chmod, fchmod through install, a file created with
// the bit by open or mknod, a setgid directory), a hard link to a file of
// root's cannot be made (its filesystem's binds are other mounts), and the
// binds it writes are nosuid. With the refusal off, the same script leaves
// a setuid file, root's on disk for a root host.
func TestASetuidBitIsRefused(t *testing.T) {
	script := `
cp /usr/bin/id suid && chmod 4755 suid; echo "chmod $?"
install -m 2755 /usr/bin/id sgid; echo "install $?"
mkdir dir && chmod g+s dir; echo "setgid dir $?"
if command -v python3 >/dev/null; then
	python3 -c 'import os; os.close(os.open("created", os.O_CREAT|os.O_WRONLY, 0o4755))'; echo "open $?"
	python3 -c 'import os, stat; os.mknod("node", stat.S_IFREG|0o4755)'; echo "mknod $?"
fi
ln /etc/hostname hardlink 2>/dev/null; echo "hard link $?"
grep -q " $PWD .*nosuid" /proc/self/mountinfo && echo "worktree nosuid"
# Every mount it may write (but the device nodes of /dev, single files):
# mount ID, parent, device, root, point, options.
while read -r id parent dev root point opts rest; do
	case ",$opts," in *,rw,*) ;; *) continue ;; esac
	case ",$opts," in *,nosuid,*) continue ;; esac
	case " $rest" in *" - devtmpfs "*) continue ;; esac
	echo "suid mount: $point"
done < /proc/self/mountinfo
true
`
	setid := func(r Run) []string {
		var out []string
		for _, name := range []string{"suid", "sgid", "dir", "created", "node"} {
			if fi, err := os.Stat(filepath.Join(r.Worktree, name)); err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
				out = append(out, name)
			}
		}
		return out
	}
	python := true
	if _, err := exec.LookPath("python3"); err != nil {
		python = false
	}

	// A builder's check, with a cache of its own to write.
	cache := t.TempDir()
	c := Config{RW: []string{cache}, Layers: filepath.Join(t.TempDir(), "layers")}
	r := box(t)
	r.Layer = "@b1"
	res := run(t, newSandbox(t, c), r, script)
	require.NoError(t, res.err, res.out)
	for _, want := range []string{"chmod 1", "install 1", "setgid dir 1", "hard link 1", "worktree nosuid"} {
		assert.Contains(t, res.out, want+"\n")
	}
	assert.NotContains(t, res.out, "suid mount:", "every mount it may write is nosuid, its cache's included")
	if python {
		assert.Contains(t, res.out, "open 1\n")
		assert.Contains(t, res.out, "mknod 1\n")
	}
	assert.Empty(t, setid(r), "no setuid or setgid bit on disk")
	assert.NoFileExists(t, filepath.Join(r.Worktree, "hardlink"))

	// As before issue 45 (and where no volume can be made): the check
	// writes the host's disk itself.
	r = box(t)
	r.Layer = "@b1"
	c.Without = Without{SetID: true, Volumes: true}
	res = run(t, newSandbox(t, c), r, script)
	require.NoError(t, res.err, res.out)
	assert.Contains(t, res.out, "chmod 0\n")
	assert.NotContains(t, res.out, "worktree nosuid")
	assert.Contains(t, res.out, "suid mount: "+r.Worktree+"\n", "the survey of mounts sees one that is not nosuid")
	for _, name := range []string{"suid", "sgid", "dir"} {
		assert.Contains(t, setid(r), name, "without the refusal the test proves nothing:\n%s", res.out)
	}
	if os.Getuid() == 0 {
		fi, err := os.Stat(filepath.Join(r.Worktree, "suid"))
		require.NoError(t, err)
		assert.Equal(t, uint32(0), ownerOf(fi), "written through the idmapped bind: root's on disk")
	}
	assert.True(t, !strings.Contains(res.out, "hard link 0"), "the allowlist alone stops the hard link")
}

func ownerOf(fi os.FileInfo) uint32 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Uid
	}
	return ^uint32(0)
}
