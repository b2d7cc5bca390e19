package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/workq"
)

// foreman cluster status shows the workers (labels, the jobs in hand and
// for how long, their counters, when NATS last heard from them), the
// hosts that give them jobs, and the jobs waiting by the labels they ask
// for, saying when no worker has those.
func TestClusterStatusShowsWorkersAndHosts(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var out strings.Builder
	writeWorkersStatus(&out,
		[]workq.WorkerStatus{
			{ID: "w1", Labels: []string{"gpu", "sandboxed"}, Sandbox: "on", Done: 7, Duplicates: 1, Seen: now.Add(-time.Second),
				Jobs: []workq.InHand{{Build: "shop", Component: "db", Run: 12, ForMS: 4200}}},
			{ID: "w2", Labels: []string{"sandboxed"}, Sandbox: "on", Infra: 2, Seen: now.Add(-time.Minute)},
		},
		[]workq.HostStatus{{Build: "shop", Host: "@0123456789abcdef", Name: "host", MaxParallel: 8, Results: 9, Refused: 1,
			Serve: "http://127.0.0.1:7070/git", InFlight: []workq.HostInFlight{{Job: "12-0-ab"}}, Seen: now.Add(-2 * time.Second)}},
		[]workq.Backlog{{Worker: "w1", Queued: 1}, {Worker: "w9", Queued: 1}},
		3*time.Second, now)
	got := out.String()
	for _, want := range []string{
		"WORKER  LABELS          SANDBOX  JOBS IN HAND           DONE  DUPLICATES  INFRA  REFUSED  LAST SEEN  NOTE",
		"w1      gpu, sandboxed  on       shop db run 12 (4.2s)  7     1           0      0        1s ago",
		"w2      sandboxed       on       -                      0     0           2      0        1m0s ago   not seen for 3 leases: stopped, or cut off from NATS",
		"host @0123456789abcdef  shop   1          8    9        1        0        http://127.0.0.1:7070/git  2s ago",
		"w9             1       not there: its host gives them to another",
	} {
		assert.Contains(t, got, want)
	}
}

// foreman worker needs the cluster: without cluster.nats it stops at
// once, with one line naming the key.
func TestWorkerNeedsTheCluster(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "foreman.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("build:\n  components:\n    - name: db\n"), 0o600))
	code, _, errOut := foreman(t, "worker", cfg)
	assert.Equal(t, 1, code)
	assert.Equal(t, "foreman: cluster.nats: not set: a worker takes its jobs from the hosts through NATS JetStream (set it to the cluster's URL, as the hosts' is)\n", errOut)
}
