package trainbench

import (
	"context"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/workq"
)

// workers are the foreman worker processes of a run, each with its own
// cluster.id and worker.work.
type workers struct {
	t      *testing.T
	dir    string
	config string
	nats   string

	mu    sync.Mutex
	procs map[string]*proc
}

func (ws *workers) start(id string) {
	p := startEnv(ws.t, ws.dir, []string{"FOREMAN_CLUSTER_ID=" + id, "FOREMAN_WORKER_WORK=" + filepath.Join(ws.dir, "workers", id)},
		"worker", "--log-level", "warn", ws.config)
	ws.mu.Lock()
	ws.procs[id] = p
	ws.mu.Unlock()
}

// queue is the cluster's job queue, as foreman cluster status reads it.
func (ws *workers) queue() *workq.Queue {
	nc, err := nats.Connect(ws.nats)
	require.NoError(ws.t, err)
	ws.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(ws.t, err)
	var q *workq.Queue
	require.Eventually(ws.t, func() bool {
		q, err = workq.Open(context.Background(), js)
		return err == nil
	}, patience, 50*time.Millisecond, "the host never made the job queue")
	return q
}

// killMidCheck waits until a worker takes a job, then half a check more,
// kills it with SIGKILL in the middle of that check, starts it again (as
// a supervisor would), and names it on the channel.
func (ws *workers) killMidCheck(check time.Duration) <-chan string {
	out := make(chan string, 1)
	q := ws.queue()
	go func() {
		deadline := time.Now().Add(patience)
		for time.Now().Before(deadline) {
			all, _, _, err := q.Status(context.Background())
			if err == nil {
				for _, s := range all {
					if len(s.Jobs) > 0 {
						<-time.After(check / 2) // where the fault lands, not a wait for anything
						ws.mu.Lock()
						p := ws.procs[s.ID]
						ws.mu.Unlock()
						_ = p.cmd.Process.Signal(syscall.SIGKILL)
						<-p.done
						ws.start(s.ID)
						out <- s.ID
						return
					}
				}
			}
			time.Sleep(20 * time.Millisecond) // polling NATS, not synchronizing: the kill lands mid-check either way
		}
	}()
	return out
}

// counts sums the workers' counters: results stored, results dropped as
// another's came first, jobs run that had been given to a worker before.
func (ws *workers) counts() (results, duplicates, again uint64) {
	all, _, _, err := ws.queue().Status(context.Background())
	require.NoError(ws.t, err)
	for _, s := range all {
		results += s.Done
		duplicates += s.Duplicates
		again += s.Again
	}
	return results, duplicates, again
}
