package trainbench

import (
	"context"
	"os"
	"os/exec"
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
	procs map[string]*worker
}

// worker is one foreman worker process, stopped when the test ends.
type worker struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (ws *workers) start(id string) {
	w := &worker{cmd: exec.Command(bin, "worker", "--log-level", "warn", ws.config), done: make(chan struct{})}
	w.cmd.Dir = ws.dir
	w.cmd.Env = append(os.Environ(), "FOREMAN_CLUSTER_ID="+id, "FOREMAN_WORKER_WORK="+filepath.Join(ws.dir, "workers", id))
	w.cmd.Stderr = os.Stderr
	require.NoError(ws.t, w.cmd.Start())
	go func() { _ = w.cmd.Wait(); close(w.done) }()
	ws.t.Cleanup(func() {
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-w.done:
		case <-time.After(30 * time.Second):
			_ = w.cmd.Process.Kill()
			<-w.done
		}
	})
	ws.mu.Lock()
	ws.procs[id] = w
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

// kill is what a kill cost: the job the killed worker held, how long
// after the kill another worker took it, and how long until its result
// was stored.
type kill struct {
	worker, job string
	again       time.Duration
	stored      time.Duration
}

// killMidCheck waits until a worker takes a job, then half a check more,
// kills it with SIGKILL in the middle of that check, starts it again (as
// a supervisor would), and follows the job until its result is stored.
func (ws *workers) killMidCheck(check time.Duration) <-chan kill {
	out := make(chan kill, 1)
	q := ws.queue()
	// Polling NATS, which has no event for any of this; the kill lands
	// mid-check whatever the poll's pace, and the times measured are
	// within a poll (20 ms).
	poll := func(ok func() bool) bool {
		for deadline := time.Now().Add(patience); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if ok() {
				return true
			}
		}
		return false
	}
	go func() {
		var k kill
		var build string
		if !poll(func() bool {
			all, _, _, err := q.Status(context.Background())
			for _, s := range all {
				if err == nil && len(s.Jobs) > 0 {
					k.worker, k.job, build = s.ID, s.Jobs[0].Job, s.Jobs[0].Build
					return true
				}
			}
			return false
		}) {
			return
		}
		<-time.After(check / 2) // where the fault lands, not a wait for anything
		ws.mu.Lock()
		p := ws.procs[k.worker]
		ws.mu.Unlock()
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		killed := time.Now()
		<-p.done
		ws.start(k.worker)
		poll(func() bool {
			all, _, _, err := q.Status(context.Background())
			for _, s := range all {
				for _, j := range s.Jobs {
					// Said after the kill (NATS runs in this process: one
					// clock), so not the killed worker's last word.
					if err == nil && j.Job == k.job && s.Seen.After(killed) {
						k.again = time.Since(killed)
						return true
					}
				}
			}
			return false
		})
		poll(func() bool {
			x, err := q.Results(context.Background(), build, k.job)
			if err == nil && len(x) > 0 {
				k.stored = time.Since(killed)
				return true
			}
			return false
		})
		out <- k
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
