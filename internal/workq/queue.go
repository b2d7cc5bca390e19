package workq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Queue is one process's handle on the job queue, its results, logs and
// who is there. Its methods may be called from several goroutines.
type Queue struct {
	js      jetstream.JetStream
	stream  jetstream.Stream
	results jetstream.KeyValue
	logs    jetstream.ObjectStore
	status  jetstream.KeyValue

	mu        sync.Mutex
	consumers map[string]jetstream.Consumer // by label set
}

// ErrNotReady is a queue that no host has made yet.
var ErrNotReady = errors.New("the job queue is not there yet: a foreman host with cluster.nats makes it when it starts")

// How long results, logs and who-is-there stay: a result is read within
// moments of being stored (its host waits for it), but a host restarted
// after a long outage should still find the logs of what it reported.
const (
	resultTTL = 24 * time.Hour
	logTTL    = 24 * time.Hour
	statusTTL = 10 * time.Minute // a worker that stopped saying it is there is dropped after this
)

// Config says how a host makes the queue.
type Config struct {
	Replicas int // copies JetStream keeps (cluster.replicas)
}

// Make opens the queue, making what is missing (a host does, at start).
func Make(ctx context.Context, js jetstream.JetStream, c Config) (*Queue, error) {
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
	q := &Queue{js: js, consumers: map[string]jetstream.Consumer{}}
	var err error
	q.stream, err = js.Stream(ctx, JobStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		q.stream, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: JobStream, Subjects: []string{JobSubjects},
			Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, Replicas: c.Replicas,
			Description: "foreman host's check jobs, for foreman worker"})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			q.stream, err = js.Stream(ctx, JobStream)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", JobStream, err)
	}
	if q.results, err = bucket(ctx, js, jetstream.KeyValueConfig{Bucket: ResultBucket, History: 1, TTL: resultTTL,
		Storage: jetstream.FileStorage, Replicas: c.Replicas}); err != nil {
		return nil, fmt.Errorf("%s: %w", ResultBucket, err)
	}
	if q.status, err = bucket(ctx, js, jetstream.KeyValueConfig{Bucket: WorkerBucket, History: 1, TTL: statusTTL,
		Storage: jetstream.FileStorage, Replicas: c.Replicas}); err != nil {
		return nil, fmt.Errorf("%s: %w", WorkerBucket, err)
	}
	q.logs, err = js.ObjectStore(ctx, CheckLogStore)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		q.logs, err = js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: CheckLogStore, TTL: logTTL,
			Storage: jetstream.FileStorage, Replicas: c.Replicas})
		if errors.Is(err, jetstream.ErrBucketExists) {
			q.logs, err = js.ObjectStore(ctx, CheckLogStore)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", CheckLogStore, err)
	}
	return q, nil
}

func bucket(ctx context.Context, js jetstream.JetStream, c jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, c.Bucket)
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return kv, err
	}
	kv, err = js.CreateKeyValue(ctx, c)
	if errors.Is(err, jetstream.ErrBucketExists) {
		return js.KeyValue(ctx, c.Bucket)
	}
	return kv, err
}

// Open opens the queue a host made (a worker does): ErrNotReady if there
// is none yet.
func Open(ctx context.Context, js jetstream.JetStream) (*Queue, error) {
	q := &Queue{js: js, consumers: map[string]jetstream.Consumer{}}
	var err error
	if q.stream, err = js.Stream(ctx, JobStream); err != nil {
		return nil, notReady(err)
	}
	if q.results, err = js.KeyValue(ctx, ResultBucket); err != nil {
		return nil, notReady(err)
	}
	if q.status, err = js.KeyValue(ctx, WorkerBucket); err != nil {
		return nil, notReady(err)
	}
	if q.logs, err = js.ObjectStore(ctx, CheckLogStore); err != nil {
		return nil, notReady(err)
	}
	return q, nil
}

func notReady(err error) error {
	if errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrBucketNotFound) {
		return ErrNotReady
	}
	return err
}

// labelsMeta is the consumer's metadata that names its label set.
const labelsMeta = "foreman-labels"

// Consumer makes (or updates) the consumer of set's jobs: a worker that
// does not acknowledge a job within ackWait (it died, or stopped saying
// it is still at it) has it delivered to another.
func (q *Queue) Consumer(ctx context.Context, set string, ackWait time.Duration) error {
	_, err := q.stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: ConsumerName(set), FilterSubject: consumerFilter(set),
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxDeliver: -1,
		DeliverPolicy: jetstream.DeliverAllPolicy, Metadata: map[string]string{labelsMeta: set},
		Description: "foreman workers with labels " + set,
	})
	return err
}

// Queued counts the jobs in the queue by label set: waiting, or in a
// worker's hands and not yet acknowledged. It reads the stream's
// subjects (what any role may read), not its consumers.
func (q *Queue) Queued(ctx context.Context) (map[string]uint64, error) {
	info, err := q.stream.Info(ctx, jetstream.WithSubjectFilter(JobSubjects))
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for subject, n := range info.State.Subjects {
		parts := strings.Split(subject, ".")
		if len(parts) != 3 {
			continue
		}
		if set, ok := unKey(parts[2]); ok {
			out[set] += n
		}
	}
	return out, nil
}

// unKey is the name cluster.Key made key of.
func unKey(key string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		if key[i] != '_' {
			b.WriteByte(key[i])
			continue
		}
		if i+2 >= len(key) {
			return "", false
		}
		n, err := strconv.ParseUint(key[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(n))
		i += 2
	}
	return b.String(), true
}

// Take waits up to wait for a job of set: nil when none came.
func (q *Queue) Take(ctx context.Context, set string, wait time.Duration) (jetstream.Msg, error) {
	q.mu.Lock()
	c := q.consumers[set]
	q.mu.Unlock()
	if c == nil {
		var err error
		if c, err = q.stream.Consumer(ctx, ConsumerName(set)); err != nil {
			return nil, err
		}
		q.mu.Lock()
		q.consumers[set] = c
		q.mu.Unlock()
	}
	// Bounded by ctx too: a worker stopping does not wait out the pull.
	fctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	batch, err := c.Fetch(1, jetstream.FetchContext(fctx))
	if err != nil {
		return nil, err
	}
	for m := range batch.Messages() {
		return m, nil
	}
	if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) && !errors.Is(err, context.DeadlineExceeded) {
		return nil, err
	}
	return nil, nil
}

// AckWait is how long set's consumer waits for a job's acknowledgment.
func (q *Queue) AckWait(ctx context.Context, set string) (time.Duration, error) {
	info, err := q.stream.Consumer(ctx, ConsumerName(set))
	if err != nil {
		return 0, err
	}
	return info.CachedInfo().Config.AckWait, nil
}

// Publish puts j on the queue, on its build's subject for its labels. It
// returns the message's sequence, which a worker names in its result. A
// publish said again (its answer was lost) is stored once: JetStream keeps
// the message id for its duplicate window.
func (q *Queue) Publish(ctx context.Context, j Job) (uint64, error) {
	data, err := json.Marshal(j)
	if err != nil {
		return 0, err
	}
	ack, err := q.js.Publish(ctx, JobSubject(j.Build, LabelSet(j.Labels)), data,
		jetstream.WithMsgID(j.Build+"/"+j.ID), jetstream.WithExpectStream(JobStream))
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// Purge withdraws and drops every job of build still in the queue,
// waiting or in a worker's hands: a host starting again (or a standby
// taking over) gave them in a life before, and will give what is still
// owed again. A worker running one finds its withdrawal (a Cancelled
// result, stored first) within a third of the ack wait and stops, so a
// dead host's checks do not hold the workers' slots to their end.
func (q *Queue) Purge(ctx context.Context, build string) error {
	if err := q.withdraw(ctx, build); err != nil {
		return err
	}
	return q.stream.Purge(ctx, jetstream.WithPurgeSubject(buildJobs(build)))
}

// withdraw stores a cancellation for each of build's jobs in the queue
// that has no result. The stream is read message by message (a work
// queue takes no second consumer over the workers' subjects), from its
// first sequence: at most the jobs in flight of every host.
func (q *Queue) withdraw(ctx context.Context, build string) error {
	info, err := q.stream.Info(ctx)
	if err != nil {
		return err
	}
	for seq := info.State.FirstSeq; seq != 0 && seq <= info.State.LastSeq; seq++ {
		m, err := q.stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(buildJobs(build)))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		seq = m.Sequence
		var j Job
		if json.Unmarshal(m.Data, &j) != nil || j.Build != build || j.ID == "" {
			continue
		}
		if _, err := q.Store(ctx, build, Result{Job: j.ID, Outcome: Cancelled}); err != nil {
			return err
		}
	}
	return nil
}

// Store stores r as its job's result, unless one is stored already:
// stored is false then (another worker, or the host's cancellation, was
// first).
func (q *Queue) Store(ctx context.Context, build string, r Result) (stored bool, err error) {
	r.V = Version
	data, err := json.Marshal(r)
	if err != nil {
		return false, err
	}
	_, err = q.results.Create(ctx, ResultKey(build, r.Job), data)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return false, nil
	}
	return err == nil, err
}

// Result is the result stored for a job of build; nil when there is none.
func (q *Queue) Result(ctx context.Context, build, job string) (*Result, error) {
	e, err := q.results.Get(ctx, ResultKey(build, job))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeResult(e.Value())
}

func decodeResult(data []byte) (*Result, error) {
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("a result that is not JSON: %w", err)
	}
	return &r, nil
}

// Stored is a result as a watch of results sees it.
type Stored struct {
	Key    string // as stored, of ResultKey's form
	Result *Result
	Err    error // it could not be read
}

// WatchResults follows the results of build stored from now on until ctx
// ends; they come on the channel, which closes when the watch ends.
func (q *Queue) WatchResults(ctx context.Context, build string) (<-chan Stored, error) {
	w, err := q.results.Watch(ctx, resultPrefix(build)+">", jetstream.UpdatesOnly(), jetstream.IgnoreDeletes())
	if err != nil {
		return nil, err
	}
	out := make(chan Stored, 64)
	go func() {
		defer close(out)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e == nil || e.Operation() != jetstream.KeyValuePut {
					continue
				}
				r, err := decodeResult(e.Value())
				select {
				case out <- Stored{Key: e.Key(), Result: r, Err: err}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

// JobOfKey is the job id a result key of build names, if it is one.
func JobOfKey(build, key string) (string, bool) {
	return strings.CutPrefix(key, resultPrefix(build))
}

// LogObject is the name a log of build's job is stored under.
func LogObject(build, job, name string) string {
	return logObject(ResultKey(build, job), name)
}

// PutLog stores a log file under name.
func (q *Queue) PutLog(ctx context.Context, name, file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = q.logs.Put(ctx, jetstream.ObjectMeta{Name: name}, f)
	return err
}

// GetLog copies the log stored under name to file.
func (q *Queue) GetLog(ctx context.Context, name, file string) error {
	return q.logs.GetFile(ctx, name, file)
}

// DeleteLog drops a log the host has copied.
func (q *Queue) DeleteLog(ctx context.Context, name string) { _ = q.logs.Delete(ctx, name) }
