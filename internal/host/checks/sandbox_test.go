package checks

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/host/sandbox"
	"github.com/agentforeman/foreman/internal/host/sandbox/sandboxtest"
)

// sandboxed is a spec whose commands run confined, in a worktree and a
// private directory of their own.
func sandboxed(t *testing.T, c sandbox.Config, commands ...[]string) Spec {
	t.Helper()
	s := spec(t)
	s.Dir = filepath.Join(t.TempDir(), "worktree")
	s.Private = filepath.Join(t.TempDir(), "private")
	require.NoError(t, os.Mkdir(s.Dir, 0o755))
	require.NoError(t, os.Mkdir(s.Private, 0o700))
	s.Sandbox = sandboxtest.New(t, c)
	s.Commands = commands
	s.Env = Env(s.Private, nil, nil)
	return s
}

func TestASandboxedCheckStoppedAtALimitSaysWhich(t *testing.T) {
	s := sandboxed(t, sandbox.Config{Limits: sandbox.Limits{Memory: 64 << 20}},
		[]string{"sh", "-c", `x=$(head -c 300000000 /dev/zero | tr '\0' x); echo done`})
	res, err := Run(context.Background(), s)
	require.NoError(t, err)
	assert.False(t, res.Passed)
	assert.Equal(t, "stopped: used more than 64MiB of memory (host.sandbox_limits.memory)", res.Line)
	assert.Contains(t, readLog(t, s), "[stopped: used more than 64MiB of memory (host.sandbox_limits.memory)]")
}

func TestAProgramTheSandboxKeepsOutSaysWhatToDo(t *testing.T) {
	s := sandboxed(t, sandbox.Config{}, []string{os.Args[0], "-test.run=^$"})
	res, err := Run(context.Background(), s)
	require.NoError(t, err)
	assert.False(t, res.Passed)
	assert.Equal(t, "did not run: sandbox: exec "+os.Args[0]+": no such file or directory (a check's filesystem holds the system directories, its worktree and the paths host.sandbox_paths names, nothing else: add the program's directory to host.sandbox_paths.ro)", res.Line)
}

func TestASandboxedCheckRuns(t *testing.T) {
	s := sandboxed(t, sandbox.Config{}, []string{"sh", "-c", "echo hello > out && cat out"})
	res, err := Run(context.Background(), s)
	require.NoError(t, err)
	require.True(t, res.Passed, res.Line)
	assert.Contains(t, readLog(t, s), "hello\n")
}
