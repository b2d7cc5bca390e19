package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/tooling/natstest"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// Two foreman worker processes started from one config (a natural way to
// use more cores) would share worker.work: one mirror, the same slot
// worktrees, so that a check runs on another job's files. The second is
// refused with one line naming the key and the holder, before it connects
// anywhere; once the first stops, a worker may start there again.
func TestASecondWorkerOnOneWorkIsRefused(t *testing.T) {
	dir := t.TempDir()
	nats := natstest.Start(t)
	config := filepath.Join(dir, "foreman.yaml")
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(`server:
  url: ws://127.0.0.1:1/ws
build:
  name: shop
  components:
    - name: db
cluster:
  nats: %s
  lease: 1s
host:
  sandbox: off
worker:
  work: work
`, nats.URL())), 0o644))

	first := roomtest.StartProc(t, foremanBin, dir, nil, "worker", config)
	first.Await(t, `(foreman worker \S+): taking check jobs`)

	second := roomtest.StartProc(t, foremanBin, dir, nil, "worker", config)
	select {
	case <-second.Done():
	case <-time.After(2 * time.Minute):
		t.Fatalf("the second worker was not refused:\n%s", second.Stderr)
	}
	assert.Equal(t, 1, second.Cmd.ProcessState.ExitCode())
	said := strings.TrimSpace(second.Stderr.String())
	lock := filepath.Join(dir, "work", "foreman-worker.lock")
	assert.Equal(t, fmt.Sprintf("foreman: worker.work: %s is in use by another foreman worker (process %d holds %s); stop it, or give this one its own worker.work",
		filepath.Join(dir, "work"), first.Cmd.Process.Pid, lock), said, "one line, naming the key, the holder and what to do")

	first.Stop(t)
	again := roomtest.StartProc(t, foremanBin, dir, nil, "worker", config)
	again.Await(t, `(foreman worker \S+): taking check jobs`)
}
