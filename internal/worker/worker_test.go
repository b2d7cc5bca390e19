package worker

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/tooling/natstest"
	"github.com/agentforeman/foreman/internal/workq"
)

// rig is a queue on an in-process NATS, with the test in a host's place,
// and a worker taking from it.
type rig struct {
	t  *testing.T
	js jetstream.JetStream
	q  *workq.Queue
	w  *Worker
}

func newRig(t *testing.T, o Options) *rig {
	t.Helper()
	ns := natstest.Start(t)
	nc, err := nats.Connect(ns.URL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	q, err := workq.Make(context.Background(), js, workq.Config{})
	require.NoError(t, err)
	o.JS, o.Work, o.Lease, o.Logger = js, t.TempDir(), 200*time.Millisecond, zerolog.Nop()
	if o.ID == "" {
		o.ID = "w1"
	}
	_, err = q.Consumer(context.Background(), o.ID, time.Second)
	require.NoError(t, err)
	w, err := New(o)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return &rig{t: t, js: js, q: q, w: w}
}

// publish puts a job as it is on worker's subject, whatever it says.
func (g *rig) publish(worker string, j workq.Job) {
	g.t.Helper()
	data, err := json.Marshal(j)
	require.NoError(g.t, err)
	_, err = g.js.Publish(context.Background(), workq.JobSubject(j.Build, worker), data)
	require.NoError(g.t, err)
}

func goodJob() workq.Job {
	return workq.Job{V: workq.Version, ID: "3-0-00112233aabbccdd", Build: "shop", Worker: "w1", Run: 3, Component: "db",
		Commit: "0123456789012345678901234567890123456789", Checks: [][]string{{"true"}},
		Sandbox: workq.Sandbox{Net: "none"}, TimeoutMS: 60000,
		Fetch: workq.Fetch{URL: "http://127.0.0.1:1/git", Ref: "refs/foreman/jobs/3", Token: "t"}, Log: "db-3.log"}
}

// The second lock: a worker that runs its checks unconfined refuses a job
// whose host requires them sandboxed, even one that reached it on a
// subject it takes (the label keeps such jobs from it: this is for a job
// that came by another way). It gives the job back for a worker that
// confines; it runs nothing.
func TestAnUnconfinedWorkerRefusesAJobThatRequiresTheSandbox(t *testing.T) {
	g := newRig(t, Options{Unconfined: true})
	j := goodJob()
	j.Sandbox.Required = true
	g.publish("w1", j)
	require.Eventually(t, func() bool { _, _, _, refused := g.w.Counts(); return refused >= 1 }, time.Minute, 10*time.Millisecond)
	done, _, infra, _ := g.w.Counts()
	assert.Zero(t, done)
	assert.Zero(t, infra)
	x, err := g.q.Result(context.Background(), "shop", j.ID, "w1")
	require.NoError(t, err)
	assert.Nil(t, x, "no result: a confining worker may still take it")
}

// A job that is malformed (a commit that is no object id) is answered,
// not dropped: its result says why, and the host tries again rather than
// wait for ever. A job of another format is left for a worker of the
// host's version.
func TestAMalformedJobIsAnswered(t *testing.T) {
	g := newRig(t, Options{Unconfined: true})
	j := goodJob()
	j.Commit = "HEAD"
	g.publish("w1", j)
	var x *workq.Result
	require.Eventually(t, func() bool {
		var err error
		x, err = g.q.Result(context.Background(), "shop", j.ID, "w1")
		return err == nil && x != nil
	}, time.Minute, 10*time.Millisecond)
	assert.Equal(t, workq.Infra, x.Outcome)
	assert.Contains(t, x.Why, `commit "HEAD" is not a full object id`)

	later := goodJob()
	later.V, later.ID = workq.Version+1, "4-0-00112233aabbccdd"
	g.publish("w1", later)
	require.Eventually(t, func() bool { _, _, _, refused := g.w.Counts(); return refused >= 2 }, time.Minute, 10*time.Millisecond)
	x, err := g.q.Result(context.Background(), "shop", later.ID, "w1")
	require.NoError(t, err)
	assert.Nil(t, x)
}

// A worker that cannot fetch the commit stores that as the
// infrastructure's failure, naming what it tried.
func TestACommitThatCannotBeFetchedIsInfra(t *testing.T) {
	g := newRig(t, Options{Unconfined: true})
	j := goodJob()
	g.publish("w1", j)
	var x *workq.Result
	require.Eventually(t, func() bool {
		var err error
		x, err = g.q.Result(context.Background(), "shop", j.ID, "w1")
		return err == nil && x != nil
	}, time.Minute, 10*time.Millisecond)
	assert.Equal(t, workq.Infra, x.Outcome)
	assert.Contains(t, x.Why, "cannot fetch 012345678901 from http://127.0.0.1:1/git")
	assert.Equal(t, "w1", x.Worker)
}

// A job withdrawn before a worker takes it (settled Cancelled: its run
// went stale) is acknowledged without being fetched or run: no word that
// it was taken, no result, nothing started, and it leaves the queue.
func TestAWithdrawnJobIsAcknowledgedUnrun(t *testing.T) {
	var started []string
	var mu sync.Mutex
	g := newRig(t, Options{Unconfined: true, Started: func(j workq.Job) {
		mu.Lock()
		started = append(started, j.ID)
		mu.Unlock()
	}})
	ctx := context.Background()
	j := goodJob()
	_, err := g.q.Settle(ctx, "shop", workq.Settled{Job: j.ID, Outcome: workq.Cancelled})
	require.NoError(t, err)
	g.publish("w1", j)
	require.Eventually(t, func() bool {
		queued, err := g.q.Queued(ctx)
		return err == nil && queued["w1"] == 0
	}, time.Minute, 10*time.Millisecond, "acknowledged: it left the queue")
	tk, err := g.q.Taken(ctx, "shop", j.ID, "w1")
	require.NoError(t, err)
	assert.Nil(t, tk, "it did not say it took it")
	x, err := g.q.Result(ctx, "shop", j.ID, "w1")
	require.NoError(t, err)
	assert.Nil(t, x, "no result: it did not try to fetch it")
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, started)
	done, _, infra, refused := g.w.Counts()
	assert.Zero(t, done+infra+refused)
}

// A job on this worker's subject that names another worker is not this
// one's: refused and dropped, nothing fetched, no word, no result.
func TestAJobGivenToAnotherIsRefused(t *testing.T) {
	g := newRig(t, Options{Unconfined: true})
	j := goodJob()
	j.Worker = "w2"
	g.publish("w1", j)
	require.Eventually(t, func() bool { _, _, _, refused := g.w.Counts(); return refused >= 1 }, time.Minute, 10*time.Millisecond)
	tk, err := g.q.Taken(context.Background(), "shop", j.ID, "w1")
	require.NoError(t, err)
	assert.Nil(t, tk)
}
