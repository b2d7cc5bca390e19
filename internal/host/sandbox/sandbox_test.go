//go:build linux

package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newSandbox makes a sandbox, or skips where this machine has none (see
// sandboxtest.New, which cannot be used here: it imports this package).
func newSandbox(t testing.TB, c Config) *Sandbox {
	t.Helper()
	if c.Home == "" {
		c.Home = t.TempDir()
	}
	s, err := New(c)
	if err != nil {
		if os.Getenv("FOREMANTEST_REQUIRE_SANDBOX") != "" {
			t.Fatalf("no sandbox on this machine: %v", err)
		}
		t.Skipf("no sandbox on this machine: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// box is one run's directories.
func box(t testing.TB) Run {
	t.Helper()
	dir := t.TempDir()
	r := Run{Worktree: filepath.Join(dir, "worktree"), Private: filepath.Join(dir, "private")}
	require.NoError(t, os.Mkdir(r.Worktree, 0o755))
	require.NoError(t, os.Mkdir(r.Private, 0o700))
	return r
}

// result is how a confined command ended.
type result struct {
	out     string
	err     error // cmd.Wait's, or the stage's
	stopped string
}

// run runs sh -c script confined in r (nil s: unconfined).
func run(t testing.TB, s *Sandbox, r Run, script string, env ...string) result {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = r.Worktree
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + r.Private, "TMPDIR=" + r.Private}, env...)
	out := &lockedBuf{}
	cmd.Stdout, cmd.Stderr = out, out
	var p *Process
	if s != nil {
		var err error
		p, err = s.Command(cmd, r)
		require.NoError(t, err)
	}
	require.NoError(t, cmd.Start())
	var res result
	if p != nil {
		if err := p.Started(); err != nil {
			_ = cmd.Wait()
			p.Done()
			return result{out: out.String(), err: err}
		}
	}
	res.err = cmd.Wait()
	if p != nil {
		res.stopped = p.Done()
	}
	res.out = out.String()
	return res
}

func TestACheckIsConfined(t *testing.T) {
	s := newSandbox(t, Config{})
	r := box(t)
	outside := filepath.Join(t.TempDir(), "outside")
	res := run(t, s, r, `
grep CapEff /proc/self/status
[ -e /proc/$HOSTPID ] || echo "cannot see the host"
ls / >/dev/null 2>&1 || echo "cannot list /"
cat /etc/shadow >/dev/null 2>&1 || echo "cannot read /etc/shadow"
cat /etc/hostname >/dev/null 2>&1 && echo "reads /etc/hostname"
(echo x > "$OUTSIDE") 2>/dev/null || echo "cannot write outside"
echo x > in-worktree && echo "writes its worktree"
echo x > "$TMPDIR/t" && echo "writes its TMPDIR"
echo x > /dev/null && echo "writes /dev/null"
grep -c : /proc/net/dev | sed 's/^/devices /'
`, "OUTSIDE="+outside, fmt.Sprintf("HOSTPID=%d", os.Getpid()))
	require.NoError(t, res.err, res.out)
	for _, want := range []string{"CapEff:\t0000000000000000", "cannot see the host", "cannot list /", "cannot read /etc/shadow",
		"reads /etc/hostname", "cannot write outside", "writes its worktree", "writes its TMPDIR", "writes /dev/null", "devices 1\n"} {
		assert.Contains(t, res.out, want)
	}
	assert.NoFileExists(t, outside)

	// Unconfined, the same script reaches all of it: the test proves the
	// sandbox, not a missing file.
	res = run(t, nil, r, `cat /etc/shadow >/dev/null && echo "reads /etc/shadow"; echo x > "$OUTSIDE" && echo "writes outside"`, "OUTSIDE="+outside)
	require.NoError(t, res.err, res.out)
	assert.Contains(t, res.out, "reads /etc/shadow")
	assert.FileExists(t, outside)
}

// leftover finds a process whose command line holds mark.
func leftover(mark string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		data, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(data, []byte(mark)) {
			var pid int
			if _, err := fmt.Sscan(e.Name(), &pid); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// The check's first process is the stage, which reaps what loses its
// parent: a test runner that does not (go test) leaves no zombies. The
// orphan says its pid; the script waits (on a loaded machine, for as long
// as it takes) until that process is gone from /proc, which a zombie is
// not: unreaped, it stays there and the wait runs out.
func TestOrphansAreReaped(t *testing.T) {
	s := newSandbox(t, Config{})
	res := run(t, s, box(t), `
(sh -c 'echo $$ > orphan; exit 0' &)
i=0
while [ $i -lt 3000 ]; do
	if [ -s orphan ] && [ ! -e /proc/$(cat orphan) ]; then break; fi
	sleep 0.01; i=$((i+1))
done
if [ -e /proc/$(cat orphan) ]; then echo "orphan $(grep '^State' /proc/$(cat orphan)/status)"; else echo "orphan reaped"; fi
echo "first $(cat /proc/1/cmdline | tr '\0' ' ')"
exit 3`)
	assert.Contains(t, res.out, "orphan reaped\n")
	assert.Contains(t, res.out, "first foreman-sandbox-stage \n", "PID 1 is the stage")
	var ee *exec.ExitError
	require.ErrorAs(t, res.err, &ee)
	assert.Equal(t, 3, ee.ExitCode(), "the stage exits with the check's status")
}

func TestNothingOutlivesACheck(t *testing.T) {
	s := newSandbox(t, Config{})
	mark := fmt.Sprintf("%d.%d", 900000+os.Getpid()%1000, os.Getpid())
	res := run(t, s, box(t), "setsid sleep "+mark+" </dev/null >/dev/null 2>&1 & sleep 0.1; echo started")
	require.NoError(t, res.err, res.out)
	assert.Empty(t, leftover(mark), "a detached process outlived its check")

	res = run(t, nil, box(t), "setsid sleep "+mark+" </dev/null >/dev/null 2>&1 & sleep 0.1; echo started")
	require.NoError(t, res.err, res.out)
	left := leftover(mark)
	assert.NotEmpty(t, left, "unconfined, the detached process lives on")
	for _, pid := range left {
		p, _ := os.FindProcess(pid)
		_ = p.Kill()
	}
}

func TestTheNetworkIsPrivate(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash (for /dev/tcp) is not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	reached := make(chan struct{}, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			reached <- struct{}{}
		}
	}()
	script := fmt.Sprintf(`bash -c 'echo hi > /dev/tcp/127.0.0.1/%d' && echo connected`, port)
	res := run(t, newSandbox(t, Config{}), box(t), script)
	assert.Error(t, res.err)
	assert.NotContains(t, res.out, "connected")
	assert.Empty(t, reached)

	res = run(t, newSandbox(t, Config{Net: NetAll}), box(t), script)
	require.NoError(t, res.err, res.out)
	<-reached

	// Its own loopback works: a test may serve and dial 127.0.0.1.
	res = run(t, newSandbox(t, Config{}), box(t), `bash -c 'exec 3<>/dev/tcp/127.0.0.1/1' 2>&1 | grep -q refused && echo "own loopback"`)
	require.NoError(t, res.err, res.out)
	assert.Contains(t, res.out, "own loopback")
}

func TestLimits(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		s := newSandbox(t, Config{Limits: Limits{Memory: 64 << 20}})
		res := run(t, s, box(t), `x=$(head -c 300000000 /dev/zero | tr '\0' x); echo done`)
		assert.Error(t, res.err)
		assert.Equal(t, "used more than 64MiB of memory (host.sandbox_limits.memory)", res.stopped)
		assert.NotContains(t, res.out, "done")
	})
	t.Run("processes", func(t *testing.T) {
		s := newSandbox(t, Config{Limits: Limits{Tasks: 50}})
		mark := fmt.Sprintf("%d.%d", 800000+os.Getpid()%1000, os.Getpid())
		res := run(t, s, box(t), `i=0; while [ $i -lt 2000 ]; do sleep `+mark+` & i=$((i+1)); done; wait`)
		assert.Error(t, res.err)
		assert.Equal(t, "ran more than 50 processes and threads (host.sandbox_limits.processes)", res.stopped)
		assert.Empty(t, leftover(mark))
	})
	// Forks refused while it holds memory: told of the processes, and
	// nothing of it is left, its cgroup included.
	t.Run("processes while holding memory", func(t *testing.T) {
		s := newSandbox(t, Config{Limits: Limits{Tasks: 50, Memory: 256 << 20}})
		mark := fmt.Sprintf("%d.%d", 810000+os.Getpid()%1000, os.Getpid())
		res := run(t, s, box(t), `x=$(head -c 40000000 /dev/zero | tr '\0' x); i=0; while [ $i -lt 2000 ]; do sleep `+mark+` & i=$((i+1)); done; wait; echo "${#x}"`)
		assert.Error(t, res.err)
		assert.Equal(t, "ran more than 50 processes and threads (host.sandbox_limits.processes)", res.stopped)
		assert.Empty(t, leftover(mark))
		if s.cg != nil {
			left, _ := filepath.Glob(filepath.Join(s.cg.memory, fmt.Sprintf("%s%d-*", cgroupPrefix, os.Getpid())))
			assert.Empty(t, left, "its cgroup was removed")
		}
	})
	t.Run("file size", func(t *testing.T) {
		s := newSandbox(t, Config{Limits: Limits{FileSize: 1 << 20}})
		r := box(t)
		res := run(t, s, r, `head -c 10000000 /dev/zero > big; echo "status $?"; echo "size $(wc -c < big)"`)
		require.NoError(t, res.err, res.out)
		assert.Contains(t, res.out, "status 153", "head was killed by SIGXFSZ")
		assert.Contains(t, res.out, "size 1048576\n")
	})
}

func TestAProgramOutsideTheSystemDoesNotRun(t *testing.T) {
	s := newSandbox(t, Config{})
	r := box(t)
	prog := filepath.Join(t.TempDir(), "tool")
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\necho ran\n"), 0o755))
	cmd := exec.Command(prog)
	cmd.Dir = r.Worktree
	p, err := s.Command(cmd, r)
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	err = p.Started()
	_ = cmd.Wait()
	p.Done()
	var se *StageError
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Equal(t, "exec "+prog+": no such file or directory", se.Msg, "not in the check's filesystem at all")

	// Named in host.sandbox_paths.ro, it runs.
	s = newSandbox(t, Config{RO: []string{filepath.Dir(prog)}})
	res := run(t, s, r, prog)
	require.NoError(t, res.err, res.out)
	assert.Equal(t, "ran\n", res.out)
}

func TestCachesAndGit(t *testing.T) {
	home := t.TempDir()
	cache := filepath.Join(home, ".cache", "tool")
	repo := t.TempDir()
	git := func(dir string, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		return string(out)
	}
	git(repo, "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(repo, "README"), []byte("hi\n"), 0o644))
	git(repo, "add", "README")
	git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first")
	git(repo, "tag", "v1.0")
	require.NoError(t, os.MkdirAll(cache, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(cache, "shared"), []byte("the host's\n"), 0o644))
	r := box(t)
	require.NoError(t, os.Remove(r.Worktree))
	git(repo, "worktree", "add", "-q", "--detach", r.Worktree, "main")
	s := newSandbox(t, Config{Home: home, RW: []string{cache}, GitDir: filepath.Join(repo, ".git"), Layers: t.TempDir()})
	priv, err := s.MakeHome(r.Private)
	require.NoError(t, err)
	r.Layer = "@b1"
	res := run(t, s, r, `set -e
echo cached > "$HOME/.cache/tool/entry"
git describe --always --tags
git log -1 --format=%s
git rev-parse --abbrev-ref HEAD
git update-ref refs/heads/evil HEAD 2>/dev/null && echo "moved a ref" || echo "cannot move a ref"
(echo x >> "$GITDIR/config") 2>/dev/null && echo "wrote config" || echo "cannot write config"
`, "HOME="+priv, "GITDIR="+filepath.Join(repo, ".git"))
	require.NoError(t, res.err, res.out)
	assert.Equal(t, "v1.0\nfirst\nHEAD\ncannot move a ref\ncannot write config\n", res.out)
	assert.NoFileExists(t, filepath.Join(cache, "entry"), "the shared cache is never written")

	// The builder's own cache is kept for its next check, and seen by no
	// other builder's.
	look := `cat "$HOME/.cache/tool/entry" 2>/dev/null || echo "no entry"`
	res = run(t, s, r, look, "HOME="+priv)
	require.NoError(t, res.err, res.out)
	assert.Equal(t, "cached\n", res.out)
	r.Layer = "@b2"
	res = run(t, s, r, look, "HOME="+priv)
	require.NoError(t, res.err, res.out)
	assert.Equal(t, "no entry\n", res.out)
}

func TestRefusals(t *testing.T) {
	home := t.TempDir()
	keys := filepath.Join(home, "proj", ".foreman")
	require.NoError(t, os.MkdirAll(keys, 0o700))
	deny := []Denied{{Key: "host.identity", Path: filepath.Join(keys, "host.json")}}
	for name, tc := range map[string]struct {
		c    Config
		want string
	}{
		"home":         {Config{Home: home, RO: []string{home}}, "host.sandbox_paths.ro[0]: " + home + " holds HOME"},
		"holds key":    {Config{Home: "/nonexistent", RW: []string{filepath.Join(home, "proj")}, Deny: deny}, "host.sandbox_paths.rw[0]: " + filepath.Join(home, "proj") + " holds host.identity"},
		"inside logs":  {Config{Home: "/nonexistent", RO: []string{filepath.Join(keys, "logs")}, Deny: []Denied{{Key: "host.logs", Path: keys}}}, "is inside host.logs"},
		"relative":     {Config{Home: home, RO: []string{"cache"}}, "host.sandbox_paths.ro[0]: cache is not an absolute path"},
		"net":          {Config{Home: home, Net: "loopback"}, `host.sandbox_net: "loopback" is not none or all`},
		"git dir root": {Config{Home: "/nonexistent", GitDir: home, Deny: deny}, "host.repo: its git directory " + home + " holds host.identity"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(tc.c)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// Before each check command the host reads the worktree's .git (for the
// admin directory the check may read): one left a link to /dev/zero, or a
// fifo, is not read at all; read, the first would never end (the host's
// memory), the second never start. gitjob's TestAttacks shows the host
// reading them without this defence (a link to a fifo standing in for
// /dev/zero, which the test machine could not survive).
func TestTheWorktreesGitIsNotFollowed(t *testing.T) {
	s := &Sandbox{}
	gitDir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(gitDir, "worktrees", "slot-1"), 0o755))
	r := box(t)
	gitFile := filepath.Join(r.Worktree, ".git")
	require.NoError(t, os.WriteFile(gitFile, []byte("gitdir: "+filepath.Join(gitDir, "worktrees", "slot-1")+"\n"), 0o644))
	assert.Equal(t, filepath.Join(gitDir, "worktrees", "slot-1"), s.worktreeAdmin(r.Worktree, gitDir))
	for name, plant := range map[string]func() error{
		"a link to /dev/zero": func() error { return os.Symlink("/dev/zero", gitFile) },
		"a fifo":              func() error { return syscall.Mkfifo(gitFile, 0o644) },
	} {
		require.NoError(t, os.Remove(gitFile))
		require.NoError(t, plant(), name)
		done := make(chan string)
		go func() { done <- s.worktreeAdmin(r.Worktree, gitDir) }()
		select {
		case admin := <-done:
			assert.Empty(t, admin, name)
		case <-time.After(time.Minute):
			t.Fatalf("%s: the host's read never ended", name)
		}
	}
}
