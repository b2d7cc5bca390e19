//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/checkspec"
)

// TestGoTestFitsTheDefaults runs `go test` of this repository's own
// packages confined, with the default limits and the Go caches docs/HOST.md
// gives, and says the most memory and tasks it used (the defaults were
// chosen from `FOREMANTEST_GO_TEST=./... go test -run GoTestFits -v
// -timeout 30m ./internal/host/sandbox`). CI runs it on one small package.
func TestGoTestFitsTheDefaults(t *testing.T) {
	pkgs := os.Getenv("FOREMANTEST_GO_TEST")
	if pkgs == "" {
		pkgs = "./internal/host/checks"
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go on PATH: %v", err)
	}
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	// The module cache is shared, read-only (the host user fills it); the
	// build cache is the builder's own (here the run's: a cold one).
	s := newSandbox(t, Config{Home: home, RO: []string{filepath.Join(home, "go", "pkg", "mod")}, RW: []string{filepath.Join(home, ".cache", "go-build")}})
	// The repository as a check would get it: its files, in a worktree of
	// the check's own.
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	require.NoError(t, err)
	r := box(t)
	archive := exec.Command("sh", "-c", `git -C "$1" archive HEAD | tar -x -C "$2"`, "sh", strings.TrimSpace(string(root)), r.Worktree)
	out, err := archive.CombinedOutput()
	require.NoError(t, err, string(out))
	priv, err := s.MakeHome(r.Private)
	require.NoError(t, err)

	cmd := exec.Command(goBin, append([]string{"test", "-count=1"}, strings.Fields(pkgs)...)...)
	cmd.Dir = r.Worktree
	cmd.Env = []string{"PATH=" + filepath.Dir(goBin) + ":/usr/bin:/bin", "HOME=" + priv, "TMPDIR=" + r.Private, "LANG=C.UTF-8", "CI=true", "GOPROXY=off"}
	log := &lockedBuf{}
	cmd.Stdout, cmd.Stderr = log, log
	p, err := s.Command(cmd, r)
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, cmd.Start())
	require.NoError(t, p.Started())
	var peak usage
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(Interval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			u := s.watch.measure(map[int]*Process{p.pid(): p})[p.pid()]
			mu.Lock()
			peak.memory, peak.tasks = max(peak.memory, u.memory), max(peak.tasks, u.tasks)
			mu.Unlock()
		}
	}()
	err = cmd.Wait()
	close(done)
	// The kernel's count, page cache included, where a cgroup holds it.
	charged := ""
	if p.cg != nil {
		for _, f := range []string{"memory.max_usage_in_bytes", "memory.peak"} {
			if data, err := os.ReadFile(filepath.Join(p.cg.memory, f)); err == nil {
				if n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil {
					charged = fmt.Sprintf("; most charged to its cgroup (page cache included) %s", checkspec.Size(n>>20<<20))
				}
			}
		}
	}
	stopped := p.Done()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("go test %s confined: %s; most memory %s (limit %s), most tasks %d (limit %d)%s", pkgs, time.Since(start).Round(time.Second),
		checkspec.Size(peak.memory>>20<<20), checkspec.Size(DefaultMemory), peak.tasks, DefaultTasks, charged)
	require.Empty(t, stopped)
	require.NoError(t, err, "%s", log.String())
}
