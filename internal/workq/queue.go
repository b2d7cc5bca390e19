package workq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentforeman/foreman/internal/cluster"
)

// Queue is one process's handle on the job queue, its results, logs and
// who is there. Its methods may be called from several goroutines.
type Queue struct {
	js      jetstream.JetStream
	stream  jetstream.Stream
	results jetstream.KeyValue
	logs    jetstream.Stream
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
	jobTTL    = 48 * time.Hour
	// A worker's logs are copied by the host as it takes the result; the
	// hour bounds how long a worker's log subject stays full (LogChunks).
	logTTL    = time.Hour
	statusTTL = 10 * time.Minute // a worker that stopped saying it is there is dropped after this
)

// Config says how a host makes the queue.
type Config struct {
	Replicas int // copies JetStream keeps (cluster.replicas)
	// Said, if set, is told what Make put back as it must be (a setting
	// of a stream someone changed, or a stream made by an older foreman).
	Said func(what string)
}

// What the streams workers write to must hold, whoever asks: workers'
// NATS users may publish to some of their subjects, and a subject
// permission cannot tell a create from an overwrite, nor see a header.
//
//   - No rollups (AllowRollup off): a message with Nats-Rollup: all would
//     purge the whole stream; the server refuses the header.
//   - No deletes or purges through the API (DenyDelete, DenyPurge): what
//     is stored stays until it ages out.
//   - In ResultBucket, one message per key and a second refused
//     (MaxMsgsPerSubject 1, Discard new per subject): a put over a key
//     that exists, or KV's delete marker, which is a second message, is
//     refused by the server, not by anyone's care.
func lockDown(c *jetstream.StreamConfig, oncePerKey bool) {
	c.AllowRollup, c.DenyDelete, c.DenyPurge = false, true, true
	if oncePerKey {
		c.MaxMsgsPerSubject, c.Discard, c.DiscardNewPerSubject = 1, jetstream.DiscardNew, true
	}
}

// lockedDown reports what of c lockDown would change.
func lockedDown(c jetstream.StreamConfig, oncePerKey bool) []string {
	var out []string
	if c.AllowRollup {
		out = append(out, "rollups allowed")
	}
	if !c.DenyDelete {
		out = append(out, "deletes allowed")
	}
	if !c.DenyPurge {
		out = append(out, "purges allowed")
	}
	if oncePerKey && (c.MaxMsgsPerSubject != 1 || c.Discard != jetstream.DiscardNew || !c.DiscardNewPerSubject) {
		out = append(out, "a key may be written again")
	}
	return out
}

// The streams' limits (docs/NATS.md): what any credential may put in
// each, whatever it tries. A message past its size, or a stream past its
// bytes, is refused.
const (
	JobMsgSize    = 512 << 10 // a job
	JobBytes      = 256 << 20 // every job queued
	ResultMsgSize = 64 << 10  // a word, a result, a settlement
	ResultBytes   = 256 << 20 // every key of FOREMAN_RESULTS
	StatusMsgSize = 64 << 10  // what a worker or a host says of itself
	StatusBytes   = 64 << 20  // every worker's and host's word
)

// kvStream is the stream behind a KV bucket, as nats.go makes one, with
// lockDown's settings and the bucket's limits.
func kvStream(bucket, about string, ttl time.Duration, replicas int, oncePerKey bool, msgSize int32, bytes int64) jetstream.StreamConfig {
	c := jetstream.StreamConfig{Name: "KV_" + bucket, Subjects: []string{"$KV." + bucket + ".>"}, Description: about,
		MaxMsgsPerSubject: 1, MaxAge: ttl, Storage: jetstream.FileStorage, Replicas: replicas,
		Duplicates: min(ttl, 2*time.Minute), AllowDirect: true, MaxMsgSize: msgSize, MaxMsgs: -1, MaxBytes: bytes}
	lockDown(&c, oncePerKey)
	return c
}

// limitsWrong says what of have's limits is not as want's.
func limitsWrong(have, want jetstream.StreamConfig) []string {
	var out []string
	if have.MaxMsgSize != want.MaxMsgSize {
		out = append(out, fmt.Sprintf("message size %d", have.MaxMsgSize))
	}
	if have.MaxBytes != want.MaxBytes {
		out = append(out, fmt.Sprintf("bytes %d", have.MaxBytes))
	}
	if want.MaxMsgsPerSubject > 1 && (have.MaxMsgsPerSubject != want.MaxMsgsPerSubject || !have.DiscardNewPerSubject) {
		out = append(out, fmt.Sprintf("%d messages per subject", have.MaxMsgsPerSubject))
	}
	if !slices.Equal(have.Subjects, want.Subjects) {
		out = append(out, fmt.Sprintf("subjects %v", have.Subjects))
	}
	return out
}

// logStream is the workers' logs: a subject per worker, LogChunks chunks
// of at most LogChunk bytes each on it (a second refused, not the oldest
// dropped: a worker's logs are evidence), for logTTL; and the stream's
// whole at most LogBytes.
func logStream(replicas int) jetstream.StreamConfig {
	c := jetstream.StreamConfig{Name: CheckLogStream, Subjects: []string{CheckLogSubjects}, MaxAge: logTTL,
		Storage: jetstream.FileStorage, Replicas: replicas, AllowDirect: true,
		MaxMsgsPerSubject: LogChunks, MaxMsgSize: LogChunk + 1024, MaxBytes: LogBytes, MaxMsgs: -1,
		Discard: jetstream.DiscardNew, DiscardNewPerSubject: true,
		Description: "foreman workers' check logs, in chunks, a subject per worker, for the host"}
	lockDown(&c, false)
	return c
}

// LogBytes bounds the log stream whole: every worker's logs.
const LogBytes = 2 << 30

// ensure opens the stream c names, making it if it is not there, and
// puts lockDown's settings back on one that lacks them.
func ensure(ctx context.Context, js jetstream.JetStream, c jetstream.StreamConfig, oncePerKey bool, said func(string)) (jetstream.Stream, error) {
	s, err := js.Stream(ctx, c.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		s, err = js.CreateStream(ctx, c)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			s, err = js.Stream(ctx, c.Name)
		}
	}
	if err != nil {
		return nil, err
	}
	have := s.CachedInfo().Config
	if wrong := append(lockedDown(have, oncePerKey), limitsWrong(have, c)...); len(wrong) > 0 {
		lockDown(&have, oncePerKey)
		have.MaxMsgSize, have.MaxBytes, have.Subjects = c.MaxMsgSize, c.MaxBytes, c.Subjects
		if c.MaxMsgsPerSubject > 1 {
			have.MaxMsgsPerSubject, have.Discard, have.DiscardNewPerSubject = c.MaxMsgsPerSubject, c.Discard, c.DiscardNewPerSubject
		}
		if s, err = js.UpdateStream(ctx, have); err != nil {
			return nil, fmt.Errorf("%s has %s, and cannot be put back: %w", c.Name, strings.Join(wrong, ", "), err)
		}
		if said != nil {
			said(fmt.Sprintf("%s had %s: put back", c.Name, strings.Join(wrong, ", ")))
		}
	}
	return s, nil
}

// Make opens the queue, making what is missing (a host does, at start),
// and putting back what must hold of it (lockDown).
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
			// A job of a worker gone for good (its consumer gone after a
			// day unused) ages out.
			MaxAge: jobTTL, MaxMsgSize: JobMsgSize, MaxBytes: JobBytes, Discard: jetstream.DiscardNew,
			Description: "foreman host's check jobs, each given to one foreman worker"})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			q.stream, err = js.Stream(ctx, JobStream)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", JobStream, err)
	}
	if _, err := ensure(ctx, js, kvStream(ResultBucket, "what foreman workers took and how it ended; how the host settled it",
		resultTTL, c.Replicas, true, ResultMsgSize, ResultBytes), true, c.Said); err != nil {
		return nil, fmt.Errorf("%s: %w", ResultBucket, err)
	}
	if _, err := ensure(ctx, js, kvStream(WorkerBucket, "foreman workers and hosts, for cluster status",
		statusTTL, c.Replicas, false, StatusMsgSize, StatusBytes), false, c.Said); err != nil {
		return nil, fmt.Errorf("%s: %w", WorkerBucket, err)
	}
	if _, err := ensure(ctx, js, logStream(c.Replicas), false, c.Said); err != nil {
		return nil, fmt.Errorf("%s: %w", CheckLogStream, err)
	}
	return bind(ctx, js, q)
}

// OpenWorker is a worker's handle on the queue: it reads no stream's
// information (a worker's user may not: STREAM.INFO with a subject filter
// would list every build's jobs, results and logs), only its own
// consumer, how a job was settled, and what it writes itself.
func OpenWorker(js jetstream.JetStream) *Queue {
	return &Queue{js: js, consumers: map[string]jetstream.Consumer{}}
}

// Open opens the queue a host made (foreman cluster status does):
// ErrNotReady if there is none yet.
func Open(ctx context.Context, js jetstream.JetStream) (*Queue, error) {
	q := &Queue{js: js, consumers: map[string]jetstream.Consumer{}}
	var err error
	if q.stream, err = js.Stream(ctx, JobStream); err != nil {
		return nil, notReady(err)
	}
	return bind(ctx, js, q)
}

func bind(ctx context.Context, js jetstream.JetStream, q *Queue) (*Queue, error) {
	var err error
	if q.results, err = js.KeyValue(ctx, ResultBucket); err != nil {
		return nil, notReady(err)
	}
	if q.status, err = js.KeyValue(ctx, WorkerBucket); err != nil {
		return nil, notReady(err)
	}
	if q.logs, err = js.Stream(ctx, CheckLogStream); err != nil {
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

// workerMeta is the consumer's metadata that names its worker.
const workerMeta = "foreman-worker"

// Consumer makes the consumer of the jobs given to worker, or puts it back
// as it must be: a worker that does not acknowledge a job within ackWait
// (it died, or stopped saying it is still at it) has it delivered again,
// to itself once it is back; the host gives the job to another when the
// worker is gone for good or revoked. Only hosts make consumers (a
// worker's user may not); the host checks them when it first gives a
// worker a job and when a job waits long. What it put back (a filter
// changed, a push consumer in the place of the pull one, another consumer
// on the worker's subjects that stole its jobs) comes back, said.
func (q *Queue) Consumer(ctx context.Context, worker string, ackWait time.Duration) (putBack []string, err error) {
	want := jetstream.ConsumerConfig{
		Durable: WorkerConsumer(worker), FilterSubject: workerFilter(worker),
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxDeliver: -1,
		DeliverPolicy: jetstream.DeliverAllPolicy, Metadata: map[string]string{workerMeta: worker},
		Description: "foreman worker " + worker + "'s jobs",
		// A worker gone for a day leaves nothing behind.
		InactiveThreshold: 24 * time.Hour,
	}
	if info, err := q.consumerInfo(ctx, want.Durable); err == nil {
		have := info.Config
		wrong := consumerWrong(have, want)
		if len(wrong) == 0 {
			return nil, nil
		}
		// A push consumer cannot be made a pull one: it goes, and the
		// right one is made again (the jobs stay in the stream).
		if err := q.stream.DeleteConsumer(ctx, want.Durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return nil, err
		}
		putBack = append(putBack, fmt.Sprintf("consumer %s had %s: made again as it must be", want.Durable, strings.Join(wrong, ", ")))
		q.forgetConsumer(worker)
	} else if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, err
	}
	_, err = q.stream.CreateOrUpdateConsumer(ctx, want)
	if err != nil && strings.Contains(err.Error(), "not unique") {
		// Another consumer filters the worker's subjects: on a work queue
		// it would take the jobs given to the worker. It goes.
		gone, derr := q.dropSquatters(ctx, worker)
		if derr != nil {
			return putBack, derr
		}
		putBack = append(putBack, gone...)
		_, err = q.stream.CreateOrUpdateConsumer(ctx, want)
	}
	return putBack, err
}

// consumerInfo is what the stream says of a consumer, pull or push.
func (q *Queue) consumerInfo(ctx context.Context, name string) (*jetstream.ConsumerInfo, error) {
	c, err := q.stream.Consumer(ctx, name)
	if errors.Is(err, jetstream.ErrNotPullConsumer) {
		pc, err := q.stream.PushConsumer(ctx, name)
		if err != nil {
			return nil, err
		}
		return pc.CachedInfo(), nil
	}
	if err != nil {
		return nil, err
	}
	return c.CachedInfo(), nil
}

// consumerWrong says what of have is not as want.
func consumerWrong(have, want jetstream.ConsumerConfig) []string {
	var out []string
	if have.DeliverSubject != "" {
		out = append(out, "push delivery to "+have.DeliverSubject)
	}
	if have.FilterSubject != want.FilterSubject || len(have.FilterSubjects) > 0 {
		out = append(out, fmt.Sprintf("filter %q", strings.Join(append([]string{have.FilterSubject}, have.FilterSubjects...), " ")))
	}
	if have.AckPolicy != want.AckPolicy {
		out = append(out, "ack policy "+have.AckPolicy.String())
	}
	if have.AckWait != want.AckWait {
		out = append(out, "ack wait "+have.AckWait.String())
	}
	if have.MaxDeliver != want.MaxDeliver && !(have.MaxDeliver <= 0 && want.MaxDeliver <= 0) {
		out = append(out, fmt.Sprintf("max deliver %d", have.MaxDeliver))
	}
	if have.DeliverPolicy != want.DeliverPolicy {
		out = append(out, "deliver policy "+have.DeliverPolicy.String())
	}
	return out
}

// dropSquatters deletes every consumer of the job stream, other than
// the worker's own, whose filter takes jobs given to worker.
func (q *Queue) dropSquatters(ctx context.Context, worker string) ([]string, error) {
	var gone []string
	l := q.stream.ListConsumers(ctx)
	for info := range l.Info() {
		if info.Name == WorkerConsumer(worker) {
			continue
		}
		filters := append([]string{info.Config.FilterSubject}, info.Config.FilterSubjects...)
		takes := false
		for _, f := range filters {
			if f == "" || subjectsOverlap(f, workerFilter(worker)) {
				takes = true
			}
		}
		if !takes {
			continue
		}
		if err := q.stream.DeleteConsumer(ctx, info.Name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return gone, err
		}
		gone = append(gone, fmt.Sprintf("consumer %s (filter %q) took the jobs of worker %s: deleted", info.Name, strings.Join(filters, " "), worker))
	}
	return gone, l.Err()
}

// subjectsOverlap reports whether some subject matches both a and b.
func subjectsOverlap(a, b string) bool {
	at, bt := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(at) && i < len(bt); i++ {
		if at[i] == ">" || bt[i] == ">" {
			return true
		}
		if at[i] != bt[i] && at[i] != "*" && bt[i] != "*" {
			return false
		}
	}
	return len(at) == len(bt)
}

func (q *Queue) forgetConsumer(worker string) {
	q.mu.Lock()
	delete(q.consumers, worker)
	q.mu.Unlock()
}

// Queued counts the jobs in the queue by the worker they were given to:
// waiting for it, or in its hands and not yet acknowledged. It reads the
// stream's subjects (a host's and a reader's user may; a worker's may
// not).
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
		if worker, ok := unKey(parts[2]); ok {
			out[worker] += n
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

// consumer is worker's consumer, as a worker's user may read it
// (CONSUMER.INFO of its own, nothing of the stream).
func (q *Queue) consumer(ctx context.Context, worker string) (jetstream.Consumer, error) {
	q.mu.Lock()
	c := q.consumers[worker]
	q.mu.Unlock()
	if c != nil {
		return c, nil
	}
	c, err := q.js.Consumer(ctx, JobStream, WorkerConsumer(worker))
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	q.consumers[worker] = c
	q.mu.Unlock()
	return c, nil
}

// ErrNoConsumer is a worker no host has given a job yet: its consumer is
// not made.
var ErrNoConsumer = errors.New("no host has given this worker a job yet")

// Take waits up to wait for a job given to worker: nil when none came.
func (q *Queue) Take(ctx context.Context, worker string, wait time.Duration) (jetstream.Msg, error) {
	c, err := q.consumer(ctx, worker)
	if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, ErrNoConsumer
	}
	if err != nil {
		return nil, err
	}
	// Bounded by ctx too: a worker stopping does not wait out the pull.
	fctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	batch, err := c.Fetch(1, jetstream.FetchContext(fctx))
	if errors.Is(err, nats.ErrNoResponders) {
		// A consumer just made answers pulls a moment after it answers
		// its info: the next pull gets through.
		return nil, nil
	}
	if err != nil {
		if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrConsumerDeleted) {
			q.forgetConsumer(worker)
			return nil, ErrNoConsumer
		}
		return nil, err
	}
	for m := range batch.Messages() {
		return m, nil
	}
	if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) && !errors.Is(err, context.DeadlineExceeded) &&
		!errors.Is(err, nats.ErrNoResponders) {
		if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrConsumerDeleted) {
			q.forgetConsumer(worker)
			return nil, ErrNoConsumer
		}
		return nil, err
	}
	return nil, nil
}

// AckWait is how long worker's consumer waits for a job's acknowledgment.
func (q *Queue) AckWait(ctx context.Context, worker string) (time.Duration, error) {
	c, err := q.js.Consumer(ctx, JobStream, WorkerConsumer(worker))
	if err != nil {
		return 0, err
	}
	return c.CachedInfo().Config.AckWait, nil
}

// Publish puts j on the queue, on its build's subject for the worker it
// is given to (j.Worker). It
// returns the message's sequence, which a worker names in its result. A
// publish said again (its answer was lost) is stored once: JetStream keeps
// the message id for its duplicate window.
func (q *Queue) Publish(ctx context.Context, j Job) (uint64, error) {
	data, err := json.Marshal(j)
	if err != nil {
		return 0, err
	}
	if j.Worker == "" {
		return 0, errors.New("a job is given to a worker")
	}
	ack, err := q.js.Publish(ctx, JobSubject(j.Build, j.Worker), data,
		jetstream.WithMsgID(j.Build+"/"+j.ID), jetstream.WithExpectStream(JobStream))
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// Purge withdraws every job of build still in the queue, waiting or in a
// worker's hands: a host starting again (or a standby taking over) gave
// them in a life before, and will give what is still owed again. A
// worker running one finds its withdrawal (the job settled Cancelled)
// within a third of the ack wait and stops, so a dead host's checks do
// not hold the workers' slots to their end; one that takes it later
// acknowledges it unrun. Nothing is purged: a host's user may not purge
// the queue (it would purge other builds' jobs: the server does not look
// at a purge's filter).
func (q *Queue) Purge(ctx context.Context, build string) error {
	return q.withdraw(ctx, build)
}

// withdraw settles as Cancelled each of build's jobs in the queue that
// is not settled. The stream is read message by message (a work queue
// takes no second consumer over the workers' subjects), from its first
// sequence: at most the jobs in flight of every host.
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
		if _, err := q.Settle(ctx, build, Settled{Job: j.ID, Outcome: Cancelled}); err != nil {
			return err
		}
	}
	return nil
}

// create stores v under key of ResultBucket unless something is stored
// there already (stored is false then): the bucket refuses a second
// message on a key whoever sends it.
func (q *Queue) create(ctx context.Context, key string, v any) (stored bool, err error) {
	data, err := json.Marshal(v)
	if err != nil {
		return false, err
	}
	// A publish that expects no message on the key before it, not KV's
	// Create: that reads the key when it exists, which a worker's user
	// may not (and would wait for an answer that never comes).
	_, err = q.js.Publish(ctx, "$KV."+ResultBucket+"."+key, data, jetstream.WithExpectLastSequencePerSubject(0))
	var api *jetstream.APIError
	if errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		return false, nil
	}
	return err == nil, err
}

// get reads key of ResultBucket into v: false when there is nothing. It
// asks for the key's last message directly (no KV handle: that reads the
// stream's information, which a worker's user may not).
func (q *Queue) get(ctx context.Context, key string, v any) (bool, error) {
	data, err := q.lastOf(ctx, "KV_"+ResultBucket, "$KV."+ResultBucket+"."+key)
	if err != nil || data == nil {
		return false, err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("%s holds no JSON: %w", key, err)
	}
	return true, nil
}

// lastOf is the last message on subject of stream, by a direct get: nil
// when there is none, or it was deleted.
func (q *Queue) lastOf(ctx context.Context, stream, subject string) ([]byte, error) {
	data, _, err := q.lastWithSeq(ctx, stream, subject)
	return data, err
}

// lastWithSeq is lastOf and the message's sequence in its stream.
func (q *Queue) lastWithSeq(ctx context.Context, stream, subject string) ([]byte, uint64, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	m, err := q.js.Conn().RequestWithContext(ctx, "$JS.API.DIRECT.GET."+stream+"."+subject, nil)
	if err != nil {
		return nil, 0, err
	}
	switch m.Header.Get("Status") {
	case "":
	case "404":
		return nil, 0, nil
	default:
		return nil, 0, fmt.Errorf("%s: %s %s", subject, m.Header.Get("Status"), m.Header.Get("Description"))
	}
	if op := m.Header.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
		return nil, 0, nil
	}
	seq, _ := strconv.ParseUint(m.Header.Get("Nats-Sequence"), 10, 64)
	return m.Data, seq, nil
}

// Settle stores how the host settled a job of build, unless it was
// settled before: stored is false then.
func (q *Queue) Settle(ctx context.Context, build string, s Settled) (stored bool, err error) {
	s.V = Version
	return q.create(ctx, SettledKey(build, s.Job), s)
}

// Settled is how a job of build was settled; nil while it is not.
func (q *Queue) Settled(ctx context.Context, build, job string) (*Settled, error) {
	var s Settled
	ok, err := q.get(ctx, SettledKey(build, job), &s)
	if !ok {
		return nil, err
	}
	return &s, nil
}

// SayTaken stores a worker's word that it took a job, under its name.
// Said twice (a delivery again to the same worker) is not an error.
func (q *Queue) SayTaken(ctx context.Context, build string, t Taken) error {
	t.V = Version
	_, err := q.create(ctx, TakenKey(build, t.Job, t.Worker), t)
	return err
}

// Taken is worker's word that it took a job of build; nil when it gave
// none.
func (q *Queue) Taken(ctx context.Context, build, job, worker string) (*Taken, error) {
	var t Taken
	ok, err := q.get(ctx, TakenKey(build, job, worker), &t)
	if !ok {
		return nil, err
	}
	return &t, nil
}

// Store stores r as its worker's result of its job, unless that worker
// stored one before: stored is false then.
func (q *Queue) Store(ctx context.Context, build string, r Result) (stored bool, err error) {
	if r.Worker == "" {
		return false, errors.New("a result names its worker")
	}
	r.V = Version
	return q.create(ctx, ResultKey(build, r.Job, r.Worker), r)
}

// Result is worker's result of a job of build; nil when there is none.
func (q *Queue) Result(ctx context.Context, build, job, worker string) (*Result, error) {
	var r Result
	ok, err := q.get(ctx, ResultKey(build, job, worker), &r)
	if !ok {
		return nil, err
	}
	return &r, nil
}

// Results are every worker's results of a job of build, as their keys
// hold them.
func (q *Queue) Results(ctx context.Context, build, job string) ([]Stored, error) {
	l, err := q.results.ListKeysFiltered(ctx, resultsOf(build, cluster.Key(job)))
	if err != nil {
		return nil, err
	}
	var out []Stored
	for key := range l.Keys() {
		e, err := q.results.Get(ctx, key)
		if err != nil {
			continue
		}
		out = append(out, stored(build, key, e.Value()))
	}
	return out, nil
}

// Stored is a result as stored under its key.
type Stored struct {
	Key    string
	Job    string // the job and the worker the key names
	Worker string
	Result *Result
	Err    error // it could not be read
}

func stored(build, key string, data []byte) Stored {
	s := Stored{Key: key}
	if parts := strings.Split(key, "."); len(parts) == 4 && parts[0] == "r" && parts[1] == cluster.Key(build) {
		s.Job, _ = unKey(parts[2])
		s.Worker, _ = unKey(parts[3])
	}
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		s.Err = fmt.Errorf("a result that is not JSON: %w", err)
	} else {
		s.Result = &r
	}
	return s
}

// WatchResults follows the results of build stored from now on until ctx
// ends; they come on the channel, which closes when the watch ends.
func (q *Queue) WatchResults(ctx context.Context, build string) (<-chan Stored, error) {
	w, err := q.results.Watch(ctx, resultsOf(build, "*"), jetstream.UpdatesOnly(), jetstream.IgnoreDeletes())
	if err != nil {
		return nil, err
	}
	return follow(ctx, w, func(e jetstream.KeyValueEntry) (Stored, bool) {
		if e.Operation() != jetstream.KeyValuePut {
			return Stored{}, false
		}
		return stored(build, e.Key(), e.Value()), true
	}), nil
}

// follow hands on what each of w's entries becomes (those each keeps),
// until ctx ends or the watch does; the channel closes then, and the
// watch stops.
func follow[T any](ctx context.Context, w jetstream.KeyWatcher, each func(jetstream.KeyValueEntry) (T, bool)) <-chan T {
	out := make(chan T, 64)
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
				if e == nil {
					continue
				}
				v, keep := each(e)
				if !keep {
					continue
				}
				select {
				case out <- v:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}
