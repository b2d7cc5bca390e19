package remote

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/host/checks"
	"github.com/agentforeman/foreman/internal/host/gitjob"
	"github.com/agentforeman/foreman/internal/tooling/natstest"
	"github.com/agentforeman/foreman/internal/workq"
)

// rig is a host's side of its workers on an in-process NATS, with a real
// repository, and a test in the workers' place: it says workers are there,
// takes the jobs given to them, and stores what results it likes.
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
	g := &rig{t: t, q: q, r: r, repo: repo, commit: commit, logs: logs}
	g.present("w1", workq.Sandboxed)
	return g
}

// present has worker say it is there with labels, every 50 ms until the
// test ends, as a worker does every lease.
func (g *rig) present(worker string, labels ...string) {
	ctx, cancel := context.WithCancel(bg)
	done := make(chan struct{})
	say := func() {
		_ = g.q.SayWorker(ctx, workq.WorkerStatus{ID: worker, Labels: labels, Parallel: 8, Jobs: []workq.InHand{}})
	}
	say()
	go func() {
		defer close(done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				say()
			}
		}
	}()
	g.t.Cleanup(func() { cancel(); <-done })
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

// take is the test in a worker's place: the next job given to worker,
// and the message's sequence. The message is acknowledged at once: left
// in hand, it would come again after the ack wait (the lease, 200 ms),
// and a later take would get this job again rather than the next one (a
// job of run 30 once more, whose result was taken: a Check that never
// answers).
func (g *rig) take(worker string) (workq.Job, uint64, jetstream.Msg) {
	g.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		msg, err := g.q.Take(bg, worker, time.Second)
		if errors.Is(err, workq.ErrNoConsumer) {
			continue // not given a job yet
		}
		require.NoError(g.t, err)
		if msg == nil {
			continue
		}
		var j workq.Job
		require.NoError(g.t, json.Unmarshal(msg.Data(), &j))
		meta, err := msg.Metadata()
		require.NoError(g.t, err)
		require.NoError(g.t, msg.DoubleAck(bg))
		return j, meta.Sequence.Stream, msg
	}
	g.t.Fatal("no job came")
	return workq.Job{}, 0, nil
}

// result is the result a worker that did j right would store.
func (g *rig) result(j workq.Job, seq uint64, worker, outcome string) workq.Result {
	g.t.Helper()
	tree, err := g.repo.TreeOf(bg, j.Commit)
	require.NoError(g.t, err)
	return workq.Result{Job: j.ID, Worker: worker, Seq: seq, Commit: j.Commit, Tree: tree, Outcome: outcome}
}

// store stores res as its worker would: its word that it took message seq
// first (signed with key, if given), then the result (signed too).
func (g *rig) store(j workq.Job, seq uint64, res workq.Result, key ...nkeys.KeyPair) {
	g.t.Helper()
	t := workq.Taken{Job: j.ID, Worker: res.Worker, Seq: seq, Commit: j.Commit}
	if len(key) > 0 {
		t.Key, t.Sig = workq.Sign(key[0], t.Signed())
		res.Key, res.Sig = workq.Sign(key[0], res.Signed())
	}
	require.NoError(g.t, g.q.SayTaken(bg, j.Build, t))
	stored, err := g.q.Store(bg, j.Build, res)
	require.NoError(g.t, err)
	require.True(g.t, stored)
}

// takeFrom is take of whichever of workers is given a job first.
func (g *rig) takeFrom(workers ...string) (workq.Job, uint64) {
	g.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		for _, w := range workers {
			msg, err := g.q.Take(bg, w, 20*time.Millisecond)
			if errors.Is(err, workq.ErrNoConsumer) || msg == nil {
				continue
			}
			require.NoError(g.t, err)
			var j workq.Job
			require.NoError(g.t, json.Unmarshal(msg.Data(), &j))
			meta, err := msg.Metadata()
			require.NoError(g.t, err)
			require.NoError(g.t, msg.DoubleAck(bg))
			return j, meta.Sequence.Stream
		}
	}
	g.t.Fatal("no job came")
	return workq.Job{}, 0
}

// heard waits until the host has heard worker say it is there.
func (g *rig) heard(worker string) {
	g.t.Helper()
	require.Eventually(g.t, func() bool {
		g.r.mu.Lock()
		defer g.r.mu.Unlock()
		return g.r.pool[worker] != nil
	}, time.Minute, 5*time.Millisecond, "the host never heard worker %s", worker)
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
	j, seq, _ := g.take("w1")
	assert.Equal(t, g.commit, j.Commit)
	assert.Equal(t, [][]string{{"make", "test"}}, j.Checks)
	assert.Equal(t, []string{"sandboxed"}, j.Labels)
	assert.Equal(t, "w1", j.Worker, "given to the one worker there")
	assert.True(t, j.Sandbox.Required)
	assert.Equal(t, "refs/foreman/jobs/11", j.Fetch.Ref)
	assert.Equal(t, "db-11.log", j.Log)
	pinned, err := g.repo.RevParse(bg, j.Fetch.Ref)
	require.NoError(t, err)
	assert.Equal(t, g.commit, pinned, "pinned while the job lives")
	require.NoError(t, j.Check())

	log := filepath.Join(t.TempDir(), "x.log")
	require.NoError(t, os.WriteFile(log, []byte("FAIL: no\n"), 0o644))
	l, err := g.q.PutLog(bg, j.Build, j.ID, "w1", j.Log, log)
	require.NoError(t, err)
	res := g.result(j, seq, "w1", workq.Failed)
	res.Command, res.Line, res.Logs = "make test", "FAIL: no", []workq.Log{l}
	g.store(j, seq, res)
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
// A worker's check that never started says why, as the host's own would:
// the core then judges whether the fault is the host's (a program missing
// on the workers is, and charges the builder nothing), instead of reading
// it as the builder's failure.
func TestAWorkersCheckThatNeverStartedSaysWhy(t *testing.T) {
	g := newRig(t)
	ch := g.check(bg, 12)
	j, seq, _ := g.take("w1")
	res := g.result(j, seq, "w1", workq.Failed)
	res.Command, res.Line = "make test", "make: not found"
	res.NotRun, res.Program, res.Interpreter = checks.NotFound, "make", ""
	g.store(j, seq, res)
	a := g.answer(ch)
	require.NoError(t, a.err)
	assert.False(t, a.checked.Passed)
	assert.Equal(t, checks.NotFound, a.checked.NotRun)
	assert.Equal(t, "make", a.checked.Program)
}

func TestAResultForNoJobIsRefused(t *testing.T) {
	g := newRig(t)
	j := workq.Job{Build: "shop", ID: "99-0-00112233aabbccdd", Commit: g.commit}
	g.store(j, 1, g.result(j, 1, "w9", workq.Passed))
	require.Eventually(t, func() bool { _, refused, _, _ := g.r.Counts(); return refused == 1 }, time.Minute, 10*time.Millisecond)
	// A run of the host's life before (StartRun 10) is late, not forged.
	j.ID = "7-0-00112233aabbccdd"
	g.store(j, 1, g.result(j, 1, "w9", workq.Passed))
	require.Eventually(t, func() bool { _, _, late, _ := g.r.Counts(); return late == 1 }, time.Minute, 10*time.Millisecond)
	results, refused, _, _ := g.r.Counts()
	assert.Zero(t, results)
	assert.Equal(t, uint64(1), refused)
}

// Bad input: a result of the worker that took the job that names a
// message it was not given, another commit or tree than the job's, is
// refused and counted, and the run is tried again (an error: the core's
// Retry, never a verdict, never the builder's fault). Without the checks,
// the host would have taken a PASS for a commit nobody checked.
func TestAResultForAnotherCommitOrMessageIsRefused(t *testing.T) {
	for name, bad := range map[string]func(r *workq.Result, seq uint64){
		"another commit":  func(r *workq.Result, _ uint64) { r.Commit = "1111111111111111111111111111111111111111" },
		"another tree":    func(r *workq.Result, _ uint64) { r.Tree = "1111111111111111111111111111111111111111" },
		"another message": func(r *workq.Result, seq uint64) { r.Seq = seq + 1 },
		"no outcome":      func(r *workq.Result, _ uint64) { r.Outcome = "maybe" },
	} {
		t.Run(name, func(t *testing.T) {
			g := newRig(t)
			ch := g.check(bg, 12)
			j, seq, _ := g.take("w1")
			res := g.result(j, seq, "w1", workq.Passed)
			bad(&res, seq)
			g.store(j, seq, res)
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
	j, seq, _ := g.take("w1")
	res := g.result(j, seq, "w1", workq.Infra)
	res.Why = "cannot fetch: connection refused"
	g.store(j, seq, res)
	a := g.answer(ch)
	require.Error(t, a.err)
	assert.Equal(t, "worker w1 could not check "+g.commit[:12]+": cannot fetch: connection refused", a.err.Error())
	g.present("w2", workq.Sandboxed)
	g.heard("w2")
	ctx, cancel := context.WithCancel(bg)
	ch = g.check(ctx, 14)
	j, _, _ = g.take("w2")
	assert.Equal(t, []string{"w1"}, j.Avoid)
	assert.Equal(t, "w2", j.Worker, "given to another worker")
	_, _, _, retried := g.r.Counts()
	assert.Equal(t, uint64(1), retried)
	cancel()
	g.answer(ch)
}

// A run gone stale is withdrawn: its job is settled Cancelled, so a
// worker running it stops, and its result, if it comes, is late.
func TestAStaleRunIsWithdrawn(t *testing.T) {
	g := newRig(t)
	ctx, cancel := context.WithCancel(bg)
	ch := g.check(ctx, 15)
	j, seq, _ := g.take("w1")
	cancel()
	a := g.answer(ch)
	assert.ErrorIs(t, a.err, context.Canceled)
	x, err := g.q.Settled(bg, j.Build, j.ID)
	require.NoError(t, err)
	require.NotNil(t, x)
	assert.Equal(t, workq.Cancelled, x.Outcome)
	g.store(j, seq, g.result(j, seq, "w1", workq.Passed))
	require.Eventually(t, func() bool { _, _, late, _ := g.r.Counts(); return late == 1 }, time.Minute, 10*time.Millisecond)
	results, refused, _, _ := g.r.Counts()
	assert.Zero(t, results)
	assert.Zero(t, refused)
}

// A result counts only from the worker that took the job: one stored
// first by another worker that never took it, or under another's name,
// or for a message it was not given, is counted and logged, never a
// verdict, and the job's own worker's result is the verdict. Without the
// taken record the host would have reported the forged PASS.
func TestAResultCountsOnlyFromTheWorkerThatTookTheJob(t *testing.T) {
	g := newRig(t)
	ch := g.check(bg, 21)
	j, seq, _ := g.take("w1")
	// The thief read the job (its id, message and commit) somewhere.
	forged := g.result(j, seq, "thief", workq.Passed)
	stored, err := g.q.Store(bg, j.Build, forged)
	require.NoError(t, err)
	require.True(t, stored)
	require.NoError(t, g.q.SayTaken(bg, j.Build, workq.Taken{Job: j.ID, Worker: "thief2", Seq: seq + 7, Commit: j.Commit}))
	forged.Worker = "thief2"
	_, err = g.q.Store(bg, j.Build, forged)
	require.NoError(t, err)
	// The attack: a worker that says it took the very message,
	// for the job's commit (it had the job delivered to it after a NAK on
	// the other's delivery, before each worker had a consumer of its
	// own): the job was given to w1, and only w1's word counts.
	require.NoError(t, g.q.SayTaken(bg, j.Build, workq.Taken{Job: j.ID, Worker: "thief3", Seq: seq, Commit: j.Commit}))
	forged.Worker = "thief3"
	_, err = g.q.Store(bg, j.Build, forged)
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, refused, _, _ := g.r.Counts(); return refused == 3 }, time.Minute, 10*time.Millisecond)
	select {
	case a := <-ch:
		t.Fatalf("a forged result was a verdict: %+v", a)
	default:
	}
	res := g.result(j, seq, "w1", workq.Failed)
	res.Command, res.Line = "make test", "FAIL: the real one"
	g.store(j, seq, res)
	a := g.answer(ch)
	require.NoError(t, a.err)
	assert.False(t, a.checked.Passed, "the real worker's FAIL, not the thief's PASS")
	settled, err := g.q.Settled(bg, j.Build, j.ID)
	require.NoError(t, err)
	assert.Equal(t, &workq.Settled{V: workq.Version, Job: j.ID, Outcome: workq.TakenBy, Worker: "w1"}, settled)
}

// With host.workers, a result counts only signed by the key the host
// trusts its worker with: a result of an untrusted worker (or one taken
// out of the file while it ran) is refused and the job tried again; one
// signed with another key, refused; the trusted worker's, the verdict.
func TestSignedResultsOfTrustedWorkers(t *testing.T) {
	w1, _ := nkeys.CreateUser()
	other, _ := nkeys.CreateUser()
	pub, _ := w1.PublicKey()
	trustFile := filepath.Join(t.TempDir(), "workers")
	require.NoError(t, os.WriteFile(trustFile, []byte("# the workers\nw1 "+pub+"\n"), 0o644))
	trust, err := workq.OpenTrust(trustFile)
	require.NoError(t, err)
	g := newRig(t, func(o *Options) { o.Trust = trust; o.Logger = zerolog.New(zerolog.NewTestWriter(t)) })

	signed := func(tk *workq.Taken, res *workq.Result, takenBy, resultBy nkeys.KeyPair, claim string) {
		if takenBy != nil {
			tk.Key, tk.Sig = workq.Sign(takenBy, tk.Signed())
		}
		if resultBy != nil {
			res.Key, res.Sig = workq.Sign(resultBy, res.Signed())
		}
		if claim != "" {
			res.Key = claim
		}
	}
	for _, c := range []struct {
		name, worker      string
		takenBy, resultBy nkeys.KeyPair
		claim             string // the key the result says signed it
		why               string
	}{
		{"unsigned", "w1", w1, nil, "", "it is not signed by worker w1's key"},
		{"another key", "w1", w1, other, "", "it is not signed by worker w1's key"},
		{"another key, claiming w1's", "w1", w1, other, pub, "its signature: its signature does not verify"},
	} {
		ch := g.check(bg, 30)
		j, seq, _ := g.take("w1")
		tk := workq.Taken{Job: j.ID, Worker: c.worker, Seq: seq, Commit: j.Commit}
		res := g.result(j, seq, c.worker, workq.Passed)
		signed(&tk, &res, c.takenBy, c.resultBy, c.claim)
		require.NoError(t, g.q.SayTaken(bg, j.Build, tk))
		_, err := g.q.Store(bg, j.Build, res)
		require.NoError(t, err)
		a := g.answer(ch)
		require.Error(t, a.err, c.name)
		assert.Contains(t, a.err.Error(), c.why, c.name)
	}

	// A worker host.workers does not trust is given no job.
	g.present("w2", workq.Sandboxed)
	g.heard("w2")
	g.r.mu.Lock()
	assert.Equal(t, "worker w2 is not one host.workers trusts", g.r.pool["w2"].why)
	assert.Equal(t, "w1", g.r.pick([]string{workq.Sandboxed}, nil))
	g.r.mu.Unlock()

	// Its word that it took the job signed with another key: not the
	// worker's word; ignored, never a verdict.
	ctx, cancel := context.WithCancel(bg)
	ch := g.check(ctx, 33)
	j, seq, _ := g.take("w1")
	_, refusedBefore, _, _ := g.r.Counts()
	tk := workq.Taken{Job: j.ID, Worker: "w1", Seq: seq, Commit: j.Commit}
	res := g.result(j, seq, "w1", workq.Passed)
	signed(&tk, &res, other, w1, "")
	require.NoError(t, g.q.SayTaken(bg, j.Build, tk))
	_, err = g.q.Store(bg, j.Build, res)
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, refused, _, _ := g.r.Counts(); return refused == refusedBefore+1 }, time.Minute, 10*time.Millisecond)
	cancel()
	assert.ErrorIs(t, g.answer(ch).err, context.Canceled, "no verdict came of it")

	ch = g.check(bg, 31)
	j, seq, _ = g.take("w1")
	g.store(j, seq, g.result(j, seq, "w1", workq.Passed), w1)
	a := g.answer(ch)
	require.NoError(t, a.err)
	assert.True(t, a.checked.Passed)

	// Taken out of the file while it holds a job: refused, tried again.
	ch = g.check(bg, 32)
	j, seq, _ = g.take("w1")
	require.NoError(t, os.WriteFile(trustFile, []byte("# w1 is gone\n"), 0o644))
	g.store(j, seq, g.result(j, seq, "w1", workq.Passed), w1)
	a = g.answer(ch)
	require.Error(t, a.err)
	assert.Contains(t, a.err.Error(), "worker w1 is not one host.workers trusts")
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
	m, err := g.q.Take(bg, "w1", 100*time.Millisecond)
	if !errors.Is(err, workq.ErrNoConsumer) {
		require.NoError(t, err)
	}
	assert.Nil(t, m)
	require.NoError(t, g.r.Start(bg, 17), "it may start again")
	ch := g.check(bg, 18)
	j, seq, _ := g.take("w1")
	g.store(j, seq, g.result(j, seq, "w1", workq.Passed))
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
	g.present("w2", "gpu", workq.Sandboxed)
	g.heard("w2")
	ch := g.check(bg, 16)
	// The gpu job goes to w2, the only worker with the label; the other
	// to either.
	var gpu, any workq.Job
	var gpuSeq, anySeq uint64
	for range 2 {
		j, seq := g.takeFrom("w1", "w2")
		if len(j.Labels) == 2 {
			gpu, gpuSeq = j, seq
			assert.Equal(t, "w2", j.Worker, "the only worker with the label")
		} else {
			any, anySeq = j, seq
		}
	}
	assert.Equal(t, []string{"gpu", "sandboxed"}, gpu.Labels)
	assert.Equal(t, [][]string{{"make", "lint"}, {"make", "test"}}, any.Checks, "in order, together")
	assert.Equal(t, [][]string{{"make", "gpu-test"}}, gpu.Checks)
	assert.Equal(t, "db-16.g1.log", gpu.Log)
	res := g.result(gpu, gpuSeq, "w2", workq.Failed)
	res.Command, res.Line = "make gpu-test", "no gpu"
	g.store(gpu, gpuSeq, res)
	res = g.result(any, anySeq, any.Worker, workq.Failed)
	res.Command, res.Line = "make test", "test failed"
	g.store(any, anySeq, res)
	a := g.answer(ch)
	require.NoError(t, a.err)
	assert.Equal(t, "make gpu-test", a.checked.Command, "make gpu-test comes before make test in host.checks")
}
