package workq

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
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
	assert.Equal(t, "KV_FOREMAN_RESULTS had rollups allowed, purges allowed, a key may be written again, message size -1, bytes -1: put back", said[0])
	info, err := s.Info(bg)
	require.NoError(t, err)
	assert.Empty(t, lockedDown(info.Config, true))
}

// A log goes in chunks on its worker's subject and comes back whole,
// checked against what the result says of it, another log of the same
// worker written meanwhile skipped.
func TestLogsInChunks(t *testing.T) {
	q, _ := open(t)
	dir := t.TempDir()
	data := bytes.Repeat([]byte("0123456789abcdef"), 3*LogChunk/16+7)
	src := filepath.Join(dir, "src.log")
	require.NoError(t, os.WriteFile(src, data, 0o644))
	small := filepath.Join(dir, "small.log")
	require.NoError(t, os.WriteFile(small, []byte("another\n"), 0o644))
	// Two logs of w1's at once (two slots): their chunks interleave on its
	// subject.
	done := make(chan Log)
	go func() {
		l, err := q.PutLog(bg, "shop", "1-0-aa", "w1", "db-3.log", src)
		assert.NoError(t, err)
		done <- l
	}()
	for range 4 {
		_, err := q.PutLog(bg, "shop", "1-0-bb", "w1", "db-4.log", small)
		require.NoError(t, err)
	}
	l := <-done
	assert.Equal(t, int64(len(data)), l.Size)
	dst := filepath.Join(dir, "dst.log")
	require.NoError(t, q.GetLog(bg, "shop", "1-0-aa", l, dst))
	got, err := os.ReadFile(dst)
	require.NoError(t, err)
	assert.Equal(t, data, got)
	bad := l
	bad.SHA256 = strings.Repeat("0", 64)
	assert.ErrorContains(t, q.GetLog(bg, "shop", "1-0-aa", bad, dst), "its SHA-256 differs")
	assert.ErrorContains(t, q.GetLog(bg, "shop", "1-0-zz", l, dst), "another log's", "a log is the job's it names")

	empty := filepath.Join(dir, "empty.log")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	l, err = q.PutLog(bg, "shop", "1-0-cc", "w1", "db-5.log", empty)
	require.NoError(t, err)
	require.NoError(t, q.GetLog(bg, "shop", "1-0-cc", l, dst))
	got, err = os.ReadFile(dst)
	require.NoError(t, err)
	assert.Empty(t, got)
}

// The limits, each filled to its figure and refused past it: a worker
// stores LogChunks chunks of logs at most (LogChunks*LogChunk bytes, its
// subject's limit), and another worker's logs are not pushed out; a chunk,
// a job, a result, a word of a worker's may be no larger than its figure.
func TestLimits(t *testing.T) {
	q, js := open(t)
	dir := t.TempDir()
	full := filepath.Join(dir, "full.log")
	require.NoError(t, os.WriteFile(full, bytes.Repeat([]byte("x"), LogChunks*LogChunk), 0o644))
	l, err := q.PutLog(bg, "shop", "1-0-aa", "w1", "db-1.log", full)
	require.NoError(t, err, "filled to its figure")
	assert.Equal(t, int64(LogChunks*LogChunk), l.Size)
	one := filepath.Join(dir, "one.log")
	require.NoError(t, os.WriteFile(one, []byte("x"), 0o644))
	_, err = q.PutLog(bg, "shop", "1-0-bb", "w1", "db-2.log", one)
	assert.ErrorContains(t, err, "maximum messages per subject exceeded", "past it")
	_, err = q.PutLog(bg, "shop", "1-0-cc", "w2", "db-3.log", one)
	assert.NoError(t, err, "another worker's logs have their own bound")
	require.NoError(t, q.GetLog(bg, "shop", "1-0-aa", l, filepath.Join(dir, "dst.log")), "what was stored stays")

	for _, c := range []struct {
		subject string
		size    int
	}{
		{LogSubject("w3"), LogChunk + 1024},
		{JobSubject("shop", "w1"), JobMsgSize},
		{"$KV." + ResultBucket + "." + ResultKey("shop", "2-0-aa", "w1"), ResultMsgSize},
		{"$KV." + WorkerBucket + ".w.w1", StatusMsgSize},
	} {
		_, err := js.Publish(bg, c.subject, bytes.Repeat([]byte("x"), c.size+1))
		assert.ErrorContains(t, err, "message size exceeds maximum allowed", "%s past %d bytes", c.subject, c.size)
		_, err = js.Publish(bg, c.subject, bytes.Repeat([]byte("x"), c.size-64))
		assert.NoError(t, err, "%s at its figure (less the headers)", c.subject)
	}
}

// The host puts its consumers back: a filter changed, a push consumer in
// the place of the pull one, another consumer stealing a worker's jobs.
func TestConsumersArePutBack(t *testing.T) {
	q, js := open(t)
	put, err := q.Consumer(bg, "w1", time.Second)
	require.NoError(t, err)
	assert.Empty(t, put)
	s, err := js.Stream(bg, JobStream)
	require.NoError(t, err)
	_, err = s.UpdateConsumer(bg, jetstream.ConsumerConfig{Durable: WorkerConsumer("w1"), FilterSubject: "foreman-jobs.none.w1",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Second, MaxDeliver: -1, InactiveThreshold: 24 * time.Hour})
	require.NoError(t, err)
	put, err = q.Consumer(bg, "w1", time.Second)
	require.NoError(t, err)
	assert.Equal(t, []string{`consumer worker-w1 had filter "foreman-jobs.none.w1": made again as it must be`}, put)

	require.NoError(t, s.DeleteConsumer(bg, WorkerConsumer("w1")))
	_, err = s.CreateOrUpdateConsumer(bg, jetstream.ConsumerConfig{Durable: "squatter", FilterSubject: "foreman-jobs.*.w1",
		DeliverSubject: "squat.w1", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	put, err = q.Consumer(bg, "w1", time.Second)
	require.NoError(t, err)
	assert.Equal(t, []string{`consumer squatter (filter "foreman-jobs.*.w1") took the jobs of worker w1: deleted`}, put)
	_, err = q.Publish(bg, Job{ID: "1-0-aa", Build: "shop", Worker: "w1"})
	require.NoError(t, err)
	m, err := q.Take(bg, "w1", 5*time.Second)
	require.NoError(t, err)
	assert.NotNil(t, m, "the worker gets its jobs again")
	assert.True(t, subjectsOverlap("foreman-jobs.>", "foreman-jobs.*.w1"))
	assert.False(t, subjectsOverlap("foreman-jobs.*.w2", "foreman-jobs.*.w1"))
}

// A job goes to the one worker it is given to, and no other; a worker no
// host gave a job has no consumer yet.
func TestJobsByWorker(t *testing.T) {
	q, js := open(t)
	m, err := OpenWorker(js).Take(bg, "w1", 100*time.Millisecond)
	assert.ErrorIs(t, err, ErrNoConsumer)
	assert.Nil(t, m)
	for _, w := range []string{"w1", "w2"} {
		_, err := q.Consumer(bg, w, time.Second)
		require.NoError(t, err)
	}
	_, err = q.Publish(bg, Job{ID: "1-0-aa", Build: "shop", Worker: "w2"})
	require.NoError(t, err)
	_, err = q.Publish(bg, Job{ID: "1-0-aa", Build: "shop", Worker: "w2"})
	require.NoError(t, err, "published again (an answer lost): stored once")
	_, err = q.Publish(bg, Job{ID: "2-0-aa", Build: "other", Worker: "w2"})
	require.NoError(t, err)
	_, err = q.Publish(bg, Job{ID: "3-0-aa", Build: "other"})
	assert.Error(t, err, "a job is given to a worker")
	queued, err := q.Queued(bg)
	require.NoError(t, err)
	assert.Equal(t, map[string]uint64{"w2": 2}, queued, "by worker, whatever the build; the duplicate stored once")
	m, err = OpenWorker(js).Take(bg, "w1", 100*time.Millisecond)
	require.NoError(t, err)
	assert.Nil(t, m, "no job for w1")
	m, err = OpenWorker(js).Take(bg, "w2", time.Second)
	require.NoError(t, err)
	require.NotNil(t, m)
	assert.Contains(t, string(m.Data()), `"build":"shop"`)
}

// A standby that takes a build over withdraws the jobs the dead host
// gave: one in a worker's hands is settled Cancelled (the worker stops on
// it, and acknowledges it), one settled already stays as it was, and
// another build's job is left alone.
func TestPurgeWithdrawsJobsInHand(t *testing.T) {
	q, _ := open(t)
	_, err := q.Consumer(bg, "w1", time.Minute)
	require.NoError(t, err)
	for _, j := range []Job{{ID: "1-0-aa", Build: "shop", Worker: "w1"}, {ID: "2-0-bb", Build: "shop", Worker: "w1"}, {ID: "1-0-cc", Build: "other", Worker: "w1"}} {
		_, err := q.Publish(bg, j)
		require.NoError(t, err)
	}
	for range 3 {
		m, err := q.Take(bg, "w1", time.Second)
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
}

func TestLabels(t *testing.T) {
	assert.Equal(t, Any, LabelSet(nil))
	assert.Equal(t, "gpu+linux", LabelSet([]string{"linux", "gpu", "linux"}))
	assert.True(t, Fits(Any, nil))
	assert.True(t, Fits("gpu", []string{"gpu", "linux"}))
	assert.False(t, Fits("gpu+sandboxed", []string{"gpu"}))
	assert.Equal(t, "foreman-jobs.shop.w_2e1", JobSubject("shop", "w.1"))
	set, ok := unKey("gpu_2blinux")
	assert.True(t, ok)
	assert.Equal(t, "gpu+linux", set)
	assert.Equal(t, "db-3.log", TryLog("db-3.log", 0))
	assert.Equal(t, "db-3.g1.again2.log", TryLog("db-3.g1.log", 2))
}

// Every field the host decides by is in what a worker signs: a result or
// a word changed in any of them after it was signed (a job, a worker, a
// message, a commit, a tree, an outcome, a log's subject, size or digest,
// a failing line...) no longer verifies. Fields are found by reflection,
// so a field added later and left out of Signed fails here; only those
// that decide nothing (the format, the clocks, the key and signature
// themselves) are exempt.
func TestEveryFieldTheHostDecidesByIsSigned(t *testing.T) {
	kp, err := nkeys.CreateUser()
	require.NoError(t, err)
	res := Result{Job: "1-0-aa", Worker: "w1", Seq: 3, Commit: strings.Repeat("a", 40), Tree: strings.Repeat("b", 40),
		Outcome: Failed, Command: "make test", Line: "FAIL", Silent: true, TimedOut: true, Stopped: true, Flaky: []string{"make lint"},
		Logs: []Log{{Name: "db-1.log", Subject: "foreman-logs.shop.1-0-aa.w1.db-1_2elog", First: 7, Size: 9, SHA256: strings.Repeat("c", 64)}},
		Why:  "why", NotRun: "not found", Program: "./check.sh", Interpreter: "/bin/zsh"}
	res.Key, res.Sig = Sign(kp, res.Signed())
	require.NoError(t, Verify(res.Key, res.Signed(), res.Sig))
	exempt := map[string]bool{"V": true, "TookMS": true, "At": true, "Key": true, "Sig": true}
	changed := 0
	rv := reflect.ValueOf(&res).Elem()
	for i := range rv.NumField() {
		name := rv.Type().Field(i).Name
		if exempt[name] {
			continue
		}
		forged := res
		forged.Flaky = slices.Clone(res.Flaky)
		forged.Logs = slices.Clone(res.Logs)
		f := reflect.ValueOf(&forged).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(f.String() + "x")
		case reflect.Bool:
			f.SetBool(!f.Bool())
		case reflect.Uint64:
			f.SetUint(f.Uint() + 1)
		case reflect.Slice:
			if name == "Logs" {
				for _, change := range []func(*Log){func(l *Log) { l.SHA256 = strings.Repeat("d", 64) }, func(l *Log) { l.Size++ },
					func(l *Log) { l.Subject += "x" }, func(l *Log) { l.First++ }, func(l *Log) { l.Name += "x" }} {
					logs := slices.Clone(res.Logs)
					change(&logs[0])
					forged.Logs = logs
					assert.Error(t, Verify(res.Key, forged.Signed(), res.Sig), "a log changed after it was signed")
				}
				continue
			}
			f.Set(reflect.Append(f, reflect.ValueOf("x")))
		default:
			t.Fatalf("Result.%s: a field of a kind this test cannot change: sign it and teach the test, or exempt it", name)
		}
		changed++
		assert.Error(t, Verify(res.Key, forged.Signed(), res.Sig), "Result.%s changed after it was signed still verifies", name)
	}
	assert.GreaterOrEqual(t, changed, 16)
	// A check that started is signed as before v3, and a worker's v3
	// signature never passes for it.
	started := res
	started.NotRun, started.Program, started.Interpreter = "", "", ""
	assert.Contains(t, string(started.Signed()), `"what":"foreman-result-v2"`)
	assert.Error(t, Verify(res.Key, started.Signed(), res.Sig), "a result signed saying its check never started, read as one that started")

	tk := Taken{Job: "1-0-aa", Worker: "w1", Seq: 3, Commit: strings.Repeat("a", 40)}
	tk.Key, tk.Sig = Sign(kp, tk.Signed())
	require.NoError(t, Verify(tk.Key, tk.Signed(), tk.Sig))
	for name, change := range map[string]func(*Taken){
		"job":    func(x *Taken) { x.Job += "x" },
		"worker": func(x *Taken) { x.Worker += "x" },
		"seq":    func(x *Taken) { x.Seq++ },
		"commit": func(x *Taken) { x.Commit = strings.Repeat("e", 40) },
	} {
		forged := tk
		change(&forged)
		assert.Error(t, Verify(tk.Key, forged.Signed(), tk.Sig), "a word whose %s changed after it was signed still verifies", name)
	}
	// A word and a result are not one another's: the same fields signed
	// as a word do not verify as a result.
	assert.NotEqual(t, Result{Job: tk.Job, Worker: tk.Worker, Seq: tk.Seq, Commit: tk.Commit}.Signed(), tk.Signed())
}
