package live

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/worker"
	"github.com/agentforeman/foreman/internal/workq"
)

// fastRetries has the core try a run again soon after a job no worker
// could do (the default waits 30s).
func fastRetries(o *Options) { o.Core.Backoff = 300 * time.Millisecond }

// Bad input: a worker that cannot fetch the job's commit (its network
// cannot reach the host) says so as the infrastructure's failure: the
// host says it will try again, and does, on another worker; the builder
// is not blamed (no FAIL, no FIX).
func TestAWorkerThatCannotFetchIsNotTheBuildersFault(t *testing.T) {
	w := newWorld(t, worldOptions{workers: true})
	w.startHostWith(nil, fastRetries)
	w.startWorkerProcess("w1", "http_proxy=http://127.0.0.1:1", "HTTP_PROXY=http://127.0.0.1:1", "no_proxy=", "NO_PROXY=")
	w.claim("b1", "db")
	w.commit("b1/db", "main", map[string]string{"db": "db\n"})
	w.say("b1", "READY db b1/db")
	said := w.expect(w.host, "queue: cannot check db yet: worker w1 could not check")
	assert.Contains(t, said, "cannot fetch")
	assert.Contains(t, said, "trying again in")
	w.startWorkerProcess("w2")
	w.expect(w.host, "CI db PASS ")
	w.expect(w.foreman, "REVIEW db")
	assert.Empty(t, w.said(w.host, "CI db FAIL"))
	assert.Empty(t, w.said(w.foreman, "FIX db"))
	workers, _, _, err := w.jobQueue().Status(bg)
	require.NoError(t, err)
	for _, s := range workers {
		if s.ID == "w1" {
			assert.NotZero(t, s.Infra, "w1 counts the jobs it could not do")
		}
	}
}

// Bad input: NATS restarted while one job runs and another waits in the
// queue. Nothing is lost (both are checked and reported), and nothing is
// run twice to a verdict (one verdict each; the one worker runs each
// commit once: the job in hand is finished, its result stored once NATS
// is back, and a delivery of it again finds it done).
func TestNATSRestartedMidQueue(t *testing.T) {
	// A lease that outlasts the restart, on a loaded machine too: the host
	// that loses its lease leads again and checks what it was checking
	// again (its runs were cancelled), which is not what this tests.
	w := newWorld(t, worldOptions{mode: "gate", workers: true, maxParallel: 2, lease: "20s"})
	w.startHost()
	w.startWorker("w1")
	q := w.jobQueue()
	w.claim("b1", "db")
	w.claim("b2", "api")
	w.commit("b1/db", "main", map[string]string{"db": "db\n"})
	w.commit("b2/api", "main", map[string]string{"api": "api\n"})
	w.say("b1", "READY db b1/db")
	w.waitStarted("db")
	w.say("b2", "READY api b2/api")
	require.Eventually(t, func() bool {
		_, hosts, backlog, err := q.Status(bg)
		// db's in w1's hand, api's waiting in the host for a free worker
		return err == nil && len(backlog) == 1 && backlog[0].Queued == 1 && len(hosts) == 1 && hosts[0].Unassigned == 1
	}, time.Minute, 10*time.Millisecond, "api's job never waited for a worker")

	w.nats.Stop()
	w.nats.Start()
	w.openGate()
	passes := map[string]string{}
	for _, c := range []string{"db", "api"} {
		w.awaitAll(w.host, "CI "+c+" PASS ")
	}
	for _, c := range []string{"db", "api"} {
		said := w.said(w.host, "CI "+c)
		require.Len(t, said, 1, "one verdict for %s:\n%s", c, w.dump())
		passes[c] = strings.Fields(strings.TrimPrefix(said[0], "CI "+c+" PASS "))[0]
	}
	record := w.readFile(w.record)
	for c, commit := range passes {
		assert.Equal(t, 1, strings.Count(record, commit), "%s's commit checked once", c)
	}
}

// Bad input: a worker with host.sandbox off, joining a host whose checks
// are confined, is never given their jobs (they ask for the label every
// confining worker has, and it has not); a worker that confines its
// checks runs them.
func TestAnUnconfinedWorkerGetsNoConfinedJob(t *testing.T) {
	w := newWorld(t, worldOptions{workers: true})
	if w.config().Host.Unconfined {
		t.Skip("this machine cannot sandbox checks: the host here confines none")
	}
	w.startHost()
	w.startWorker("loose", func(c *config.Config, _ *worker.Options) {
		if c != nil {
			c.Host.Unconfined = true
		}
	})
	q := w.jobQueue()
	w.claim("b1", "db")
	w.commit("b1/db", "main", map[string]string{"db": "db\n"})
	w.say("b1", "READY db b1/db")
	// The job waits in the host, given to no worker, while the loose
	// worker is there a few leases.
	require.Eventually(t, func() bool {
		workers, _, backlog, err := q.Status(bg)
		if err != nil || len(workers) != 1 {
			return false
		}
		assert.Equal(t, []string(nil), nilIfEmpty(workers[0].Labels), "no sandboxed label")
		assert.Equal(t, "off", workers[0].Sandbox)
		assert.Empty(t, backlog, "nothing given to the loose worker")
		return workers[0].UpMS > 3000
	}, time.Minute, 20*time.Millisecond)
	assert.Empty(t, w.said(w.host, "CI db"))
	w.startWorker("tight")
	w.expect(w.host, "CI db PASS ")
	workers, _, _, err := q.Status(bg)
	require.NoError(t, err)
	for _, s := range workers {
		if s.ID == "loose" {
			assert.Zero(t, s.Done, "the loose worker ran nothing")
		}
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// A worker stalled (SIGSTOP) past three leases: the host gives up on its
// job (withdrawn), and the run is tried again on the other worker, which
// finishes it. The stalled one's run, when it wakes, counts for nothing.
// One verdict.
func TestAStalledWorkersResultIsDroppedAndCounted(t *testing.T) {
	w := newWorld(t, worldOptions{mode: "gate", workers: true})
	w.startHost()
	procs := map[string]*workerProc{"w1": w.startWorkerCmd("w1"), "w2": w.startWorkerCmd("w2")}
	q := w.jobQueue()
	w.claim("b1", "db")
	w.commit("b1/db", "main", map[string]string{"db": "db\n"})
	w.say("b1", "READY db b1/db")
	w.waitStarted("db")
	holder := w.workerWith(q, "db")
	require.NoError(t, procs[holder].cmd.Process.Signal(syscall.SIGSTOP))
	w.closeGateFiles("db")
	w.waitStarted("db") // the other has it now
	w.openGate()
	w.expect(w.host, "CI db PASS ")
	require.NoError(t, procs[holder].cmd.Process.Signal(syscall.SIGCONT))
	// The host gave up on the stalled worker (silent past three leases):
	// the job was withdrawn, and what the worker does with it on waking
	// (it stops, or stores a result) counts for nothing.
	require.Eventually(t, func() bool {
		workers, _, _, err := q.Status(bg)
		if err != nil {
			return false
		}
		for _, s := range workers {
			if s.ID == holder {
				return len(s.Jobs) == 0 && s.UpMS > 0
			}
		}
		return false
	}, time.Minute, 20*time.Millisecond, "the stalled worker never let its job go")
	w.expect(w.foreman, "REVIEW db")
	assert.Len(t, w.said(w.host, "CI db"), 1, "one verdict:\n%s", w.dump())
}

// Bad input: a worker whose wall clock is three hours off. Nothing the
// host or the worker decides reads it: the job's time limit runs on the
// worker's monotonic clock, a dead worker is found by JetStream's ack
// wait, and cluster status's last seen is NATS's own clock. Its result is
// reported as any other; its stamps say the time it believes.
func TestAWorkerWhoseClockIsOff(t *testing.T) {
	w := newWorld(t, worldOptions{workers: true, ciTimeout: "1m"})
	w.startHost()
	off := -3 * time.Hour
	w.startWorker("w1", func(_ *config.Config, o *worker.Options) {
		if o != nil {
			o.Now = func() time.Time { return time.Now().Add(off) }
		}
	})
	q := w.jobQueue()
	w.claim("b1", "db")
	w.commit("b1/db", "main", map[string]string{"db": "db\n"})
	w.say("b1", "READY db b1/db")
	w.expect(w.host, "CI db PASS ")
	var st workq.WorkerStatus
	require.Eventually(t, func() bool {
		workers, _, _, err := q.Status(bg)
		if err != nil || len(workers) != 1 {
			return false
		}
		st = workers[0]
		return st.Done == 1
	}, time.Minute, 20*time.Millisecond)
	assert.WithinDuration(t, time.Now().Add(off), st.At, time.Minute, "it stamps the time it believes")
	assert.WithinDuration(t, time.Now(), st.Seen, time.Minute, "last seen is NATS's clock")
}

// Bad input: a check program the workers do not have (there when they
// started, gone when the job comes). The worker's result says its check
// never started, and why, as a check on the host would: the host says the
// fault is its own (host-fault, with the fix), and the builder is not told
// to fix what it did not break. (Before the result said so, the builder
// got FIX db for a program missing on the workers.)
func TestAProgramMissingOnTheWorkersIsTheHostsFault(t *testing.T) {
	prog := filepath.Join(filepath.Dir(os.Args[0]), "check-gone-"+strconv.Itoa(os.Getpid()))
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	t.Cleanup(func() { _ = os.Remove(prog) })
	w := newWorld(t, worldOptions{workers: true, checks: fmt.Sprintf("[%q]", prog)})
	w.startHostWith(nil, fastRetries)
	w.startWorkerProcess("w1")
	w.claim("b1", "db")
	w.commit("b1/db", "main", map[string]string{"db": "db\n"})
	require.Eventually(t, func() bool { // the worker started, its programs there
		workers, _, _, err := w.jobQueue().Status(bg)
		return err == nil && len(workers) == 1
	}, time.Minute, 20*time.Millisecond)
	require.NoError(t, os.Remove(prog))
	w.say("b1", "READY db b1/db")
	said := w.expect(w.host, "CI db FAIL host-fault: ")
	assert.Contains(t, said, "check-gone-")
	assert.Contains(t, said, "not found")
	assert.Empty(t, w.said(w.foreman, "FIX db"))
}
