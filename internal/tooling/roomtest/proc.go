package roomtest

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// patience bounds every wait on a process: the machine may be busy.
// Nothing here measures speed.
const patience = 5 * time.Minute

// Proc is a process of the foreman binary that a test runs, its stderr
// kept, stopped with SIGINT (killed if it will not stop) when the test
// ends.
type Proc struct {
	Cmd    *exec.Cmd
	Stderr *SyncBuffer
	done   chan struct{}
}

// StartProc starts bin with args in dir, in the environment env (nil:
// CleanEnv).
func StartProc(t testing.TB, bin, dir string, env []string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Cmd: exec.Command(bin, args...), Stderr: &SyncBuffer{}, done: make(chan struct{})}
	if env == nil {
		env = CleanEnv()
	}
	p.Cmd.Dir, p.Cmd.Stderr, p.Cmd.Env = dir, p.Stderr, env
	require.NoError(t, p.Cmd.Start())
	go func() { _ = p.Cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.Stop(t) })
	return p
}

// Done is closed once the process has ended.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Await waits until the process's stderr matches re and returns the first
// group.
func (p *Proc) Await(t testing.TB, re string) string {
	t.Helper()
	pattern := regexp.MustCompile(re)
	deadline := time.Now().Add(patience)
	for {
		if m := pattern.FindStringSubmatch(p.Stderr.String()); m != nil {
			return m[1]
		}
		select {
		case <-p.done:
			t.Fatalf("%v ended before saying %s:\n%s", p.Cmd.Args, re, p.Stderr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v did not say %s:\n%s", p.Cmd.Args, re, p.Stderr)
		}
	}
}

// Stop sends SIGINT and waits; a process that will not stop is killed,
// and the test fails.
func (p *Proc) Stop(t testing.TB) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.Cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(patience):
		_ = p.Cmd.Process.Kill()
		<-p.done
		t.Errorf("%v did not stop on SIGINT", p.Cmd.Args)
	}
}

// CleanEnv is this process's environment without its FOREMAN_* settings.
func CleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FOREMAN_") {
			env = append(env, kv)
		}
	}
	return env
}

// Identity creates (or reads) a key with bin's foreman identity, run in
// dir, and returns its sender id.
func Identity(t testing.TB, bin, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"identity"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, f := range strings.Fields(string(out)) {
		if strings.HasPrefix(f, "@") && len(f) == 17 {
			return f
		}
	}
	t.Fatalf("no sender id in %s", out)
	return ""
}
