package workq

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/tooling/natstest"
)

var bg = context.Background()

func open(t *testing.T) (*Queue, jetstream.JetStream) {
	t.Helper()
	ns := natstest.Start(t)
	nc, err := nats.Connect(ns.URL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	_, err = Open(bg, js)
	require.ErrorIs(t, err, ErrNotReady, "nothing until a host makes it")
	q, err := Make(bg, js, Config{})
	require.NoError(t, err)
	return q, js
}

// The first result stored for a job wins; a second is refused by NATS
// itself (a create on a key that exists), not by anyone's care.
func TestTheFirstResultStoredWins(t *testing.T) {
	q, _ := open(t)
	first := Result{Job: "1-0-aabbccdd", Worker: "w1", Outcome: Passed}
	stored, err := q.Store(bg, "shop", first)
	require.NoError(t, err)
	assert.True(t, stored)
	stored, err = q.Store(bg, "shop", Result{Job: "1-0-aabbccdd", Worker: "w2", Outcome: Failed})
	require.NoError(t, err)
	assert.False(t, stored)
	x, err := q.Result(bg, "shop", "1-0-aabbccdd")
	require.NoError(t, err)
	assert.Equal(t, "w1", x.Worker)
	assert.Equal(t, Version, x.V)
	x, err = q.Result(bg, "other build", "1-0-aabbccdd")
	require.NoError(t, err)
	assert.Nil(t, x, "results are the build's")
}

// A job goes to one worker of its label set at a time; the host's purge
// at its start drops its build's jobs, and no other build's.
func TestJobsByLabelSetAndPurge(t *testing.T) {
	q, _ := open(t)
	for _, set := range []string{Any, "gpu"} {
		require.NoError(t, q.Consumer(bg, set, time.Second))
	}
	_, err := q.Publish(bg, Job{ID: "1-0-aa", Build: "shop", Labels: []string{"gpu"}})
	require.NoError(t, err)
	_, err = q.Publish(bg, Job{ID: "1-0-aa", Build: "shop", Labels: []string{"gpu"}})
	require.NoError(t, err, "published again (an answer lost): stored once")
	_, err = q.Publish(bg, Job{ID: "2-0-aa", Build: "other", Labels: []string{"gpu"}})
	require.NoError(t, err)
	queued, err := q.Queued(bg)
	require.NoError(t, err)
	assert.Equal(t, map[string]uint64{"gpu": 2}, queued, "by label set, whatever the build; the duplicate stored once")
	m, err := q.Take(bg, Any, 100*time.Millisecond)
	require.NoError(t, err)
	assert.Nil(t, m, "no job for any worker")
	require.NoError(t, q.Purge(bg, "shop"))
	m, err = q.Take(bg, "gpu", time.Second)
	require.NoError(t, err)
	require.NotNil(t, m)
	assert.Contains(t, string(m.Data()), `"build":"other"`)
	m, err = q.Take(bg, "gpu", 100*time.Millisecond)
	require.NoError(t, err)
	assert.Nil(t, m, "the duplicate publish was stored once, and purged")
}

// A standby that takes a build over withdraws the jobs the dead host
// gave: one in a worker's hands gets a cancellation as its result (the
// worker stops on it), one answered already keeps its result, and another
// build's job is left alone.
func TestPurgeWithdrawsJobsInHand(t *testing.T) {
	q, _ := open(t)
	require.NoError(t, q.Consumer(bg, Any, time.Minute))
	for _, j := range []Job{{ID: "1-0-aa", Build: "shop"}, {ID: "2-0-bb", Build: "shop"}, {ID: "1-0-cc", Build: "other"}} {
		_, err := q.Publish(bg, j)
		require.NoError(t, err)
	}
	for range 3 {
		m, err := q.Take(bg, Any, time.Second)
		require.NoError(t, err)
		require.NotNil(t, m, "taken, not acknowledged: in a worker's hands")
	}
	_, err := q.Store(bg, "shop", Result{Job: "2-0-bb", Worker: "w1", Outcome: Passed})
	require.NoError(t, err)

	require.NoError(t, q.Purge(bg, "shop"))
	x, err := q.Result(bg, "shop", "1-0-aa")
	require.NoError(t, err)
	require.NotNil(t, x)
	assert.Equal(t, Cancelled, x.Outcome)
	x, err = q.Result(bg, "shop", "2-0-bb")
	require.NoError(t, err)
	assert.Equal(t, Passed, x.Outcome, "a result stored first stays")
	x, err = q.Result(bg, "other", "1-0-cc")
	require.NoError(t, err)
	assert.Nil(t, x, "another build's job is not withdrawn")
	queued, err := q.Queued(bg)
	require.NoError(t, err)
	assert.Equal(t, map[string]uint64{Any: 1}, queued, "the build's jobs dropped, the other's kept")
}

func TestLabels(t *testing.T) {
	assert.Equal(t, Any, LabelSet(nil))
	assert.Equal(t, "gpu+linux", LabelSet([]string{"linux", "gpu", "linux"}))
	assert.True(t, Fits(Any, nil))
	assert.True(t, Fits("gpu", []string{"gpu", "linux"}))
	assert.False(t, Fits("gpu+sandboxed", []string{"gpu"}))
	assert.Equal(t, "foreman-jobs.shop.gpu_2blinux", JobSubject("shop", "gpu+linux"))
	set, ok := unKey("gpu_2blinux")
	assert.True(t, ok)
	assert.Equal(t, "gpu+linux", set)
	assert.Equal(t, "db-3.log", TryLog("db-3.log", 0))
	assert.Equal(t, "db-3.g1.again2.log", TryLog("db-3.g1.log", 2))
}
