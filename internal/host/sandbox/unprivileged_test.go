//go:build linux

package sandbox

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nobody is the user the test runs itself as.
const nobody = 65534

// A host that is not root gives each check a user namespace as well
// (CLONE_NEWUSER): run as root, this test runs itself again as nobody, so
// that branch runs here too.
func TestAsAnUnprivilegedUser(t *testing.T) {
	if os.Getenv("FOREMANTEST_SANDBOX_UNPRIVILEGED") != "" {
		asNobody(t)
		return
	}
	if os.Getuid() != 0 {
		asNobody(t) // not root already: this is the branch
		return
	}
	newSandbox(t, Config{}) // skips where this machine has none (inside a sandboxed check, say)
	// The test binary sits in a directory only root may enter: copy it
	// where nobody may run it.
	dir, err := os.MkdirTemp("", "sandbox-unprivileged-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	bin := filepath.Join(dir, "sandbox.test")
	copyFile(t, os.Args[0], bin)
	tmp := filepath.Join(dir, "tmp")
	require.NoError(t, os.Mkdir(tmp, 0o700))
	require.NoError(t, os.Chown(tmp, nobody, nobody))
	cmd := exec.Command(bin, "-test.run=^TestAsAnUnprivilegedUser$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = []string{"FOREMANTEST_SANDBOX_UNPRIVILEGED=1", "PATH=/usr/bin:/bin", "TMPDIR=" + tmp, "HOME=/nonexistent",
		"FOREMANTEST_REQUIRE_SANDBOX=" + os.Getenv("FOREMANTEST_REQUIRE_SANDBOX")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "--- SKIP") {
		t.Skipf("as nobody: %s", out)
	}
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "--- PASS: TestAsAnUnprivilegedUser")
}

func asNobody(t *testing.T) {
	// A user who may not make a cgroup (nobody, here) gets a host that
	// refuses to start, unless it asks for the watcher by name.
	_, err := New(Config{Home: t.TempDir()})
	require.Error(t, err, "nobody made a cgroup")
	if !strings.Contains(err.Error(), "Landlock") && !strings.Contains(err.Error(), "user namespace") {
		assert.Contains(t, err.Error(), "host.sandbox_memory: cannot make a memory cgroup for each check (")
		assert.Contains(t, err.Error(), "or set host.sandbox_memory: watcher")
	}
	s := newSandbox(t, Config{Memory: MemoryWatcher})
	require.True(t, s.userns, "without CAP_SYS_ADMIN the sandbox takes a user namespace")
	r := box(t)
	outside := filepath.Join(os.TempDir(), "outside")
	res := run(t, s, r, `
echo "uid $(id -u)"
grep CapEff /proc/self/status
(echo x > "$OUTSIDE") 2>/dev/null || echo "cannot write outside"
echo x > in-worktree && echo "writes its worktree"
grep -c : /proc/net/dev | sed 's/^/devices /'
`, "OUTSIDE="+outside)
	require.NoError(t, res.err, res.out)
	for _, want := range []string{"uid " + itoa(os.Getuid()) + "\n", "CapEff:\t0000000000000000", "cannot write outside", "writes its worktree", "devices 1\n"} {
		assert.Contains(t, res.out, want)
	}
	assert.NoFileExists(t, outside)
	assert.Contains(t, strings.Join(s.Describe(), "\n"), "user (the host is not root")
}

func itoa(n int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
		if n == 0 {
			return string(b)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}
