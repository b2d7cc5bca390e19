package workq

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
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

// Each worker's result of a job is written once: a second, by anyone, is
// refused by NATS itself (the bucket keeps one message per key and
// refuses another), not by anyone's care; so is KV's delete marker. Two
// workers' results of one job are two keys, both kept for the host.
func TestAResultIsWrittenOnce(t *testing.T) {
	q, js := open(t)
	first := Result{Job: "1-0-aabbccdd", Worker: "w1", Outcome: Passed}
	stored, err := q.Store(bg, "shop", first)
	require.NoError(t, err)
	assert.True(t, stored)
	stored, err = q.Store(bg, "shop", Result{Job: "1-0-aabbccdd", Worker: "w1", Outcome: Failed})
	require.NoError(t, err)
	assert.False(t, stored)
	kv, err := js.KeyValue(bg, ResultBucket)
	require.NoError(t, err)
	_, err = kv.Put(bg, ResultKey("shop", "1-0-aabbccdd", "w1"), []byte(`{"outcome":"failed"}`))
	assert.Error(t, err, "a put over it")
	assert.Error(t, kv.Delete(bg, ResultKey("shop", "1-0-aabbccdd", "w1")), "a delete marker")
	x, err := q.Result(bg, "shop", "1-0-aabbccdd", "w1")
	require.NoError(t, err)
	assert.Equal(t, Passed, x.Outcome)
	assert.Equal(t, Version, x.V)

	stored, err = q.Store(bg, "shop", Result{Job: "1-0-aabbccdd", Worker: "w2", Outcome: Failed})
	require.NoError(t, err)
	assert.True(t, stored, "another worker's is its own key")
	all, err := q.Results(bg, "shop", "1-0-aabbccdd")
	require.NoError(t, err)
	require.Len(t, all, 2)
	assert.ElementsMatch(t, []string{"w1", "w2"}, []string{all[0].Worker, all[1].Worker})
	x, err = q.Result(bg, "other build", "1-0-aabbccdd", "w1")
	require.NoError(t, err)
	assert.Nil(t, x, "results are the build's")
}

// The streams workers write to refuse a rollup (which would purge them
// whole) and deletes; one made by an older foreman, or changed by hand,
// is put back when a host makes the queue, and said.
func TestTheStreamsArePutBack(t *testing.T) {
	q, js := open(t)
	_, err := q.Store(bg, "shop", Result{Job: "1-0-aa", Worker: "w1", Outcome: Passed})
	require.NoError(t, err)
	for _, name := range []string{"KV_" + ResultBucket, "KV_" + WorkerBucket, CheckLogStream} {
		m := nats.NewMsg(map[string]string{"KV_" + ResultBucket: "$KV." + ResultBucket + ".r.x.y.z",
			"KV_" + WorkerBucket: "$KV." + WorkerBucket + ".w.z", CheckLogStream: "foreman-logs.x.y.z.a"}[name])
		m.Header.Set("Nats-Rollup", "all")
		_, err := js.PublishMsg(bg, m)
		assert.Error(t, err, "%s: a rollup", name)
		s, err := js.Stream(bg, name)
		require.NoError(t, err)
		assert.Error(t, s.Purge(bg), "%s: a purge", name)
	}
	s, err := js.Stream(bg, "KV_"+ResultBucket)
	require.NoError(t, err)
	// As an older foreman made it (nats.go's KV defaults).
	require.NoError(t, js.DeleteStream(bg, s.CachedInfo().Config.Name))
	_, err = js.CreateKeyValue(bg, jetstream.KeyValueConfig{Bucket: ResultBucket})
	require.NoError(t, err)
	var said []string
	_, err = Make(bg, js, Config{Said: func(s string) { said = append(said, s) }})
	require.NoError(t, err)
	require.Len(t, said, 1)
	assert.Equal(t, "KV_FOREMAN_RESULTS had rollups allowed, purges allowed, a key may be written again: put back", said[0])
	info, err := s.Info(bg)
	require.NoError(t, err)
	assert.Empty(t, lockedDown(info.Config, true))
}

// A log goes in chunks on its own subject and comes back whole, checked
// against what the result says of it.
func TestLogsInChunks(t *testing.T) {
	q, _ := open(t)
	dir := t.TempDir()
	data := bytes.Repeat([]byte("0123456789abcdef"), 3*logChunk/16+7)
	src := filepath.Join(dir, "src.log")
	require.NoError(t, os.WriteFile(src, data, 0o644))
	l, err := q.PutLog(bg, "shop", "1-0-aa", "w1", "db-3.log", src)
	require.NoError(t, err)
	assert.Equal(t, int64(len(data)), l.Size)
	// Another log meanwhile, on its own subject.
	_, err = q.PutLog(bg, "shop", "1-0-bb", "w2", "db-4.log", src)
	require.NoError(t, err)
	dst := filepath.Join(dir, "dst.log")
	require.NoError(t, q.GetLog(bg, l, dst))
	got, err := os.ReadFile(dst)
	require.NoError(t, err)
	assert.Equal(t, data, got)
	bad := l
	bad.SHA256 = strings.Repeat("0", 64)
	assert.ErrorContains(t, q.GetLog(bg, bad, dst), "its SHA-256 differs")

	empty := filepath.Join(dir, "empty.log")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	l, err = q.PutLog(bg, "shop", "1-0-cc", "w1", "db-5.log", empty)
	require.NoError(t, err)
	require.NoError(t, q.GetLog(bg, l, dst))
	got, err = os.ReadFile(dst)
	require.NoError(t, err)
	assert.Empty(t, got)
}

// The host puts its consumers back: a filter changed, a push consumer in
// the place of the pull one, another consumer stealing a label's jobs.
func TestConsumersArePutBack(t *testing.T) {
	q, js := open(t)
	put, err := q.Consumer(bg, "gpu", time.Second)
	require.NoError(t, err)
	assert.Empty(t, put)
	s, err := js.Stream(bg, JobStream)
	require.NoError(t, err)
	_, err = s.UpdateConsumer(bg, jetstream.ConsumerConfig{Durable: ConsumerName("gpu"), FilterSubject: "foreman-jobs.none.gpu",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Second, MaxDeliver: -1})
	require.NoError(t, err)
	put, err = q.Consumer(bg, "gpu", time.Second)
	require.NoError(t, err)
	assert.Equal(t, []string{`consumer workers-gpu had filter "foreman-jobs.none.gpu": made again as it must be`}, put)

	require.NoError(t, s.DeleteConsumer(bg, ConsumerName("gpu")))
	_, err = s.CreateOrUpdateConsumer(bg, jetstream.ConsumerConfig{Durable: "squatter", FilterSubject: "foreman-jobs.*.gpu",
		DeliverSubject: "squat.gpu", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	put, err = q.Consumer(bg, "gpu", time.Second)
	require.NoError(t, err)
	assert.Equal(t, []string{`consumer squatter (filter "foreman-jobs.*.gpu") took the jobs of gpu: deleted`}, put)
	_, err = q.Publish(bg, Job{ID: "1-0-aa", Build: "shop", Labels: []string{"gpu"}})
	require.NoError(t, err)
	m, err := q.Take(bg, "gpu", 5*time.Second)
	require.NoError(t, err)
	assert.NotNil(t, m, "the workers get the label's jobs again")
	assert.True(t, subjectsOverlap("foreman-jobs.>", "foreman-jobs.*.gpu"))
	assert.False(t, subjectsOverlap("foreman-jobs.*.any", "foreman-jobs.*.gpu"))
}

// A job goes to one worker of its label set at a time; the host's purge
// at its start drops its build's jobs, and no other build's.
func TestJobsByLabelSetAndPurge(t *testing.T) {
	q, _ := open(t)
	for _, set := range []string{Any, "gpu"} {
		_, err := q.Consumer(bg, set, time.Second)
		require.NoError(t, err)
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
// gave: one in a worker's hands is settled Cancelled (the worker stops on
// it), one settled already stays as it was, and another build's job is
// left alone.
func TestPurgeWithdrawsJobsInHand(t *testing.T) {
	q, _ := open(t)
	_, err := q.Consumer(bg, Any, time.Minute)
	require.NoError(t, err)
	for _, j := range []Job{{ID: "1-0-aa", Build: "shop"}, {ID: "2-0-bb", Build: "shop"}, {ID: "1-0-cc", Build: "other"}} {
		_, err := q.Publish(bg, j)
		require.NoError(t, err)
	}
	for range 3 {
		m, err := q.Take(bg, Any, time.Second)
		require.NoError(t, err)
		require.NotNil(t, m, "taken, not acknowledged: in a worker's hands")
	}
	_, err = q.Settle(bg, "shop", Settled{Job: "2-0-bb", Outcome: TakenBy, Worker: "w1"})
	require.NoError(t, err)

	require.NoError(t, q.Purge(bg, "shop"))
	x, err := q.Settled(bg, "shop", "1-0-aa")
	require.NoError(t, err)
	require.NotNil(t, x)
	assert.Equal(t, Cancelled, x.Outcome)
	x, err = q.Settled(bg, "shop", "2-0-bb")
	require.NoError(t, err)
	assert.Equal(t, TakenBy, x.Outcome, "settled first, it stays")
	x, err = q.Settled(bg, "other", "1-0-cc")
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
