package remote

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/host/gitjob"
	"github.com/agentforeman/foreman/internal/tooling/natstest"
	"github.com/agentforeman/foreman/internal/workq"
)

// rig is a host's side of its workers on an in-process NATS, with a real
// repository, and a test in the workers' place: it takes the jobs from the
// queue and stores what results it likes.
type rig struct {
	t      *testing.T
	q      *workq.Queue
	r      *Remote
	repo   *gitrepo.Repo
	commit string // a commit of the repository's, to check
	logs   string
}

func newRig(t *testing.T, change ...func(*Options)) *rig {
	t.Helper()
	ns := natstest.Start(t)
	nc, err := nats.Connect(ns.URL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	q, err := workq.Make(bg, js, workq.Config{})
	require.NoError(t, err)
	dir := t.TempDir()
	repo, err := gitrepo.Init(bg, filepath.Join(dir, "repo.git"), "main", true)
	require.NoError(t, err)
	main, err := repo.RevParse(bg, "refs/heads/main")
	require.NoError(t, err)
	commit, err := repo.CommitFiles(bg, main, map[string]string{"db": "db\n"}, "work", gitrepo.Author{Name: "b", Email: "b@x"})
	require.NoError(t, err)
	logs := filepath.Join(dir, "logs")
	require.NoError(t, os.MkdirAll(logs, 0o755))
	o := Options{Queue: q, Repo: repo, Serve: "127.0.0.1:0", Build: "shop", Host: "@0123456789abcdef", Name: "host", Target: "main",
		Checks: [][]string{{"make", "test"}}, Timeout: time.Minute, LogLimit: 1 << 20, Logs: logs,
		Sandbox: workq.Sandbox{Required: true, Net: "none"}, MaxParallel: 4, Lease: 200 * time.Millisecond,
		Logger: zerolog.Nop()}
	for _, f := range change {
		f(&o)
	}
	r := New(o)
	require.NoError(t, r.Start(bg, 10))
	t.Cleanup(r.Close)
	return &rig{t: t, q: q, r: r, repo: repo, commit: commit, logs: logs}
}

// check runs Check for run in the background; its answer comes on the channel.
type answer struct {
	checked gitjob.Checked
	err     error
}

func (g *rig) check(ctx context.Context, run int) <-chan answer {
	out := make(chan answer, 1)
	go func() {
		c, err := g.r.Check(ctx, gitjob.CheckRequest{Job: host.Job{Run: run, Component: "db", Ref: "b1/db"}, Commit: g.commit, Base: g.commit})
		out <- answer{c, err}
	}()
	return out
}

// take is the test in a worker's place: the next job of set, and the
// message's sequence.
func (g *rig) take(set string) (workq.Job, uint64, jetstream.Msg) {
	g.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		msg, err := g.q.Take(bg, set, time.Second)
		require.NoError(g.t, err)
		if msg == nil {
			continue
		}
		var j workq.Job
		require.NoError(g.t, json.Unmarshal(msg.Data(), &j))
		meta, err := msg.Metadata()
		require.NoError(g.t, err)
		return j, meta.Sequence.Stream, msg
	}
	g.t.Fatal("no job came")
	return workq.Job{}, 0, nil
}

func (g *rig) store(j workq.Job, res workq.Result) {
	g.t.Helper()
	stored, err := g.q.Store(bg, j.Build, res)
	require.NoError(g.t, err)
	require.True(g.t, stored)
}

func (g *rig) answer(ch <-chan answer) answer {
	g.t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(time.Minute):
		g.t.Fatal("Check never answered")
		return answer{}
	}
}

// A job says what a worker needs: the commit, pinned where the host
// serves it; the checks; the sandbox the host requires, as a label. The
// result a worker stores for it, naming the message it was given and the
// commit, is the verdict, with its logs copied into host.logs under the
// host's names; the pin goes with the job.
func TestAJobAndItsResult(t *testing.T) {
	g := newRig(t)
	ch := g.check(bg, 11)
	j, seq, msg := g.take("sandboxed")
	assert.Equal(t, g.commit, j.Commit)
	assert.Equal(t, [][]string{{"make", "test"}}, j.Checks)
	assert.Equal(t, []string{"sandboxed"}, j.Labels)
	assert.True(t, j.Sandbox.Required)
	assert.Equal(t, "refs/foreman/jobs/11", j.Fetch.Ref)
	assert.Equal(t, "db-11.log", j.Log)
	pinned, err := g.repo.RevParse(bg, j.Fetch.Ref)
	require.NoError(t, err)
	assert.Equal(t, g.commit, pinned, "pinned while the job lives")
	require.NoError(t, j.Check())

	log := filepath.Join(t.TempDir(), "x.log")
	require.NoError(t, os.WriteFile(log, []byte("FAIL: no\n"), 0o644))
	obj := workq.LogObject(j.Build, j.ID, j.Log)
	require.NoError(t, g.q.PutLog(bg, obj, log))
	g.store(j, workq.Result{Job: j.ID, Worker: "w1", Seq: seq, Commit: j.Commit, Outcome: workq.Failed,
		Command: "make test", Line: "FAIL: no", Logs: []string{obj}})
	require.NoError(t, msg.Ack())
	a := g.answer(ch)
	require.NoError(t, a.err)
	assert.False(t, a.checked.Passed)
	assert.Equal(t, "FAIL: no", a.checked.Line)
	require.Equal(t, []string{filepath.Join(g.logs, "db-11.log")}, a.checked.Logs)
	data, err := os.ReadFile(a.checked.Logs[0])
	require.NoError(t, err)
	assert.Equal(t, "FAIL: no\n", string(data))
	gone, _ := g.repo.RevParse(bg, j.Fetch.Ref)
	assert.Empty(t, gone, "the pin goes with the job")
	results, refused, _, _ := g.r.Counts()
	assert.Equal(t, uint64(1), results)
	assert.Zero(t, refused)
}

// Bad input: a result for a job the host never gave is refused and
// counted; nothing waits for it, nothing is reported.
func TestAResultForNoJobIsRefused(t *testing.T) {
	g := newRig(t)
	j := workq.Job{Build: "shop", ID: "99-0-00112233aabbccdd"}
	g.store(j, workq.Result{Job: j.ID, Worker: "w9", Seq: 1, Commit: g.commit, Outcome: workq.Passed})
	require.Eventually(t, func() bool { _, refused, _, _ := g.r.Counts(); return refused == 1 }, time.Minute, 10*time.Millisecond)
	// A run of the host's life before (StartRun 10) is late, not forged.
	j.ID = "7-0-00112233aabbccdd"
	g.store(j, workq.Result{Job: j.ID, Worker: "w9", Seq: 1, Commit: g.commit, Outcome: workq.Passed})
	require.Eventually(t, func() bool { _, _, late, _ := g.r.Counts(); return late == 1 }, time.Minute, 10*time.Millisecond)
	results, refused, _, _ := g.r.Counts()
	assert.Zero(t, results)
	assert.Equal(t, uint64(1), refused)
}

// Bad input: a result for the job that names a message it was not given
// (it read the job some other way), or another commit than the job's, is
// refused and counted, and the run is tried again (an error: the core's
// Retry, never a verdict, never the builder's fault). Without the checks,
// the host would have taken a PASS for a commit nobody checked.
func TestAResultForAnotherCommitOrMessageIsRefused(t *testing.T) {
	for name, bad := range map[string]func(r *workq.Result, seq uint64){
		"another commit":  func(r *workq.Result, _ uint64) { r.Commit = "1111111111111111111111111111111111111111" },
		"another message": func(r *workq.Result, seq uint64) { r.Seq = seq + 1 },
		"no outcome":      func(r *workq.Result, _ uint64) { r.Outcome = "maybe" },
	} {
		t.Run(name, func(t *testing.T) {
			g := newRig(t)
			ch := g.check(bg, 12)
			j, seq, _ := g.take("sandboxed")
			res := workq.Result{Job: j.ID, Worker: "w1", Seq: seq, Commit: j.Commit, Outcome: workq.Passed}
			bad(&res, seq)
			g.store(j, res)
			a := g.answer(ch)
			require.Error(t, a.err)
			assert.Contains(t, a.err.Error(), "worker w1 could not check")
			assert.Contains(t, a.err.Error(), "its result was refused")
			_, refused, _, _ := g.r.Counts()
			assert.Equal(t, uint64(1), refused)
		})
	}
}

// A job a worker could not do (it could not fetch the commit, say) is an
// error naming the worker, for the core to try the run again; the next
// job for that commit asks that worker to leave it to others.
func TestAJobNoWorkerCouldDoIsTriedAgainElsewhere(t *testing.T) {
	g := newRig(t)
	ch := g.check(bg, 13)
	j, seq, _ := g.take("sandboxed")
	g.store(j, workq.Result{Job: j.ID, Worker: "w1", Seq: seq, Commit: j.Commit, Outcome: workq.Infra, Why: "cannot fetch: connection refused"})
	a := g.answer(ch)
	require.Error(t, a.err)
	assert.Equal(t, "worker w1 could not check "+g.commit[:12]+": cannot fetch: connection refused", a.err.Error())
	ctx, cancel := context.WithCancel(bg)
	ch = g.check(ctx, 14)
	j, _, _ = g.take("sandboxed")
	assert.Equal(t, []string{"w1"}, j.Avoid)
	_, _, _, retried := g.r.Counts()
	assert.Equal(t, uint64(1), retried)
	cancel()
	g.answer(ch)
}

// A run gone stale is withdrawn: its job is taken off the queue, and its
// cancellation stored as its result, so a worker running it stops and its
// own result is dropped.
func TestAStaleRunIsWithdrawn(t *testing.T) {
	g := newRig(t)
	ctx, cancel := context.WithCancel(bg)
	ch := g.check(ctx, 15)
	j, seq, _ := g.take("sandboxed")
	cancel()
	a := g.answer(ch)
	assert.ErrorIs(t, a.err, context.Canceled)
	x, err := g.q.Result(bg, j.Build, j.ID)
	require.NoError(t, err)
	require.NotNil(t, x)
	assert.Equal(t, workq.Cancelled, x.Outcome)
	stored, err := g.q.Store(bg, j.Build, workq.Result{Job: j.ID, Worker: "w1", Seq: seq, Commit: j.Commit, Outcome: workq.Passed})
	require.NoError(t, err)
	assert.False(t, stored, "the worker's result comes second: dropped")
}

// A host that does not give the build's jobs now (a standby, or one not
// started) answers a check with an error, for the core to try it later,
// and gives nothing.
func TestAHostNotStartedGivesNoJob(t *testing.T) {
	g := newRig(t)
	g.r.Close()
	a := g.answer(g.check(bg, 17))
	require.Error(t, a.err)
	assert.Contains(t, a.err.Error(), "does not give the build's jobs")
	m, err := g.q.Take(bg, "sandboxed", 100*time.Millisecond)
	require.NoError(t, err)
	assert.Nil(t, m)
	require.NoError(t, g.r.Start(bg, 17), "it may start again")
	ch := g.check(bg, 18)
	j, seq, _ := g.take("sandboxed")
	g.store(j, workq.Result{Job: j.ID, Worker: "w1", Seq: seq, Commit: j.Commit, Outcome: workq.Passed})
	require.NoError(t, g.answer(ch).err)
}

// Checks that ask for different labels are jobs of their own, one per
// label set, run at once; the verdict is every one's, and a failure is
// the one of the check that comes first in host.checks.
func TestChecksSplitByLabels(t *testing.T) {
	g := newRig(t, func(o *Options) {
		o.Checks = [][]string{{"make", "lint"}, {"make", "gpu-test"}, {"make", "test"}}
		o.Labels = [][]string{nil, {"gpu"}, nil}
	})
	assert.Equal(t, []string{"sandboxed", "gpu+sandboxed"}, g.r.LabelSets())
	ch := g.check(bg, 16)
	any, anySeq, _ := g.take("sandboxed")
	gpu, gpuSeq, _ := g.take("gpu+sandboxed")
	assert.Equal(t, [][]string{{"make", "lint"}, {"make", "test"}}, any.Checks, "in order, together")
	assert.Equal(t, [][]string{{"make", "gpu-test"}}, gpu.Checks)
	assert.Equal(t, "db-16.g1.log", gpu.Log)
	g.store(gpu, workq.Result{Job: gpu.ID, Worker: "w2", Seq: gpuSeq, Commit: gpu.Commit, Outcome: workq.Failed, Command: "make gpu-test", Line: "no gpu"})
	g.store(any, workq.Result{Job: any.ID, Worker: "w1", Seq: anySeq, Commit: any.Commit, Outcome: workq.Failed, Command: "make test", Line: "test failed"})
	a := g.answer(ch)
	require.NoError(t, a.err)
	assert.Equal(t, "make gpu-test", a.checked.Command, "make gpu-test comes before make test in host.checks")
}
