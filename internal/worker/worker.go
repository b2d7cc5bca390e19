// Package worker is foreman worker: it takes the check jobs a host gives
// it from the cluster's job queue (package workq: a consumer of its own,
// which only its NATS user may pull and acknowledge from), fetches exactly the commit each names from
// its host into a mirror it keeps between jobs, runs the checks in a slot
// worktree of that mirror, in the sandbox the host's own checks run in
// (package sandbox, the same host.sandbox* keys), and stores the result
// and the logs for the host to report.
//
// A job is acknowledged only once its result is stored; while it runs, the
// worker tells JetStream it is still at it (in-progress acks). A worker
// that dies has its job delivered to it again after cluster.lease, once it
// is back; a host gives it to another when the worker stays away. A
// worker that ran a job twice (a delivery again after a stall) stores one
// result: the first; the other is dropped, and counted. A job whose commit the worker cannot fetch is
// stored as an infrastructure failure: the host tries it again, on
// another worker if one is free, and never blames the builder.
package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/internal/cluster"
	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host/checks"
	"github.com/agentforeman/foreman/internal/host/gitjob"
	"github.com/agentforeman/foreman/internal/host/sandbox"
	"github.com/agentforeman/foreman/internal/lockfile"
	"github.com/agentforeman/foreman/internal/workq"
)

// Options configure a worker.
type Options struct {
	JS       jetstream.JetStream
	ID       string   // cluster.id
	Labels   []string // worker.labels
	Parallel int      // worker.parallel
	Work     string   // worker.work
	// Sandbox is this machine's sandbox (host.sandbox_paths, the worker's
	// own files to keep from its checks, HOME); Unconfined is host.sandbox
	// off. A job's sandbox is this one with the host's limits and the
	// stricter of the two networks.
	Sandbox    sandbox.Config
	Unconfined bool
	// Lease is how often the worker says it is there (cluster.lease).
	Lease  time.Duration
	Logger zerolog.Logger
	// Now is the wall clock, read only for stamps people read (default
	// time.Now): nothing the worker or the host decides depends on it.
	Now func() time.Time
	// Started, if set, is told each job as its checks are about to run
	// (tests).
	Started func(workq.Job)
	// Key signs what the worker says it took and how it ended: its NATS
	// user's nkey (cluster.creds), or a key of its own in worker.work.
	// The host counts results only from workers whose keys it trusts
	// (host.workers).
	Key nkeys.KeyPair
	// JWT is its NATS user's JWT (cluster.creds), which it shows the hosts
	// in what it says of itself: they give jobs only to a worker the
	// account's worker signing key made and has not revoked.
	JWT string
}

// Worker is one foreman worker process.
type Worker struct {
	o      Options
	q      *workq.Queue
	log    zerolog.Logger
	start  time.Time
	labels []string // Options.Labels, and Sandboxed when it confines its checks

	mu      sync.Mutex
	inHand  map[string]*inHand
	local   int // numbers of its runs, for their private directories
	builds  map[string]*mirror
	boxes   map[string]*sandbox.Sandbox
	counts  counts
	stopped bool

	lock *os.File // worker.work is this worker's alone (Close lets it go)
}

type counts struct {
	done, duplicates, infra, refused, again uint64
}

type inHand struct {
	job   workq.Job
	since time.Time
}

// maxDeliveries is how many times a job may be given before a worker,
// rather than run it again, says no worker could: each that took it died,
// or stalled past the lease. It is then tried again by the host as a new
// job, after a wait.
const maxDeliveries = 5

// New makes a worker; Run runs it.
func New(o Options) (*Worker, error) {
	if o.Parallel <= 0 {
		o.Parallel = 1
	}
	if o.Lease <= 0 {
		o.Lease = cluster.DefaultLease
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	abs, err := filepath.Abs(o.Work)
	if err != nil {
		return nil, err
	}
	o.Work = abs
	if err := os.MkdirAll(o.Work, 0o755); err != nil {
		return nil, fmt.Errorf("worker.work: %w", err)
	}
	// Two workers in one directory would check out one job's commit over
	// another's in the same slots, and share a mirror: a check would run
	// on files that are not its job's. The second is refused.
	path := filepath.Join(o.Work, lockName)
	lock, err := lockfile.Take(path)
	if errors.Is(err, lockfile.ErrHeld) {
		return nil, fmt.Errorf("worker.work: %s is in use by another foreman worker (%s holds %s); stop it, or give this one its own worker.work",
			o.Work, lockfile.Holder(path), path)
	}
	if err != nil {
		return nil, fmt.Errorf("worker.work: %w", err)
	}
	w := &Worker{o: o, log: o.Logger, start: time.Now(), inHand: map[string]*inHand{}, builds: map[string]*mirror{},
		boxes: map[string]*sandbox.Sandbox{}, lock: lock}
	w.labels = slices.Clone(o.Labels)
	if !o.Unconfined {
		w.labels = append(w.labels, workq.Sandboxed)
	}
	slices.Sort(w.labels)
	return w, nil
}

// lockName is the worker's lock in worker.work.
const lockName = "foreman-worker.lock"

// Connect gives the worker its JetStream, when New was not given one
// (worker.work is taken before anything connects).
func (w *Worker) Connect(js jetstream.JetStream) { w.o.JS = js }

// Close lets worker.work go, for another worker once this one has stopped.
func (w *Worker) Close() error { return w.lock.Close() }

// Labels are what the worker offers, Sandboxed included when it confines
// its checks.
func (w *Worker) Labels() []string { return slices.Clone(w.labels) }

// Run takes and runs jobs until ctx ends. A job under way when it ends is
// given back at once (not acknowledged), for another worker to run.
func (w *Worker) Run(ctx context.Context) error {
	w.prune(ctx)
	if err := w.open(ctx); err != nil {
		if errors.Is(err, context.Canceled) {
			return nil // stopped before any host made the queue
		}
		return err
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); w.heartbeat(ctx) }()
	for i := 0; i < w.o.Parallel; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); w.slot(ctx) }()
	}
	wg.Wait()
	gone, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	w.q.WorkerGone(gone, w.o.ID)
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil
	}
	return ctx.Err()
}

// open opens the worker's side of the job queue: its own consumer, which
// a host makes when it first gives it a job, is waited for by its slots.
func (w *Worker) open(context.Context) error {
	w.q = workq.OpenWorker(w.o.JS)
	return nil
}

// prune ends what a worker killed outright left: the process groups of
// its checks (unconfined ones outlive it) and half-made worktrees.
func (w *Worker) prune(ctx context.Context) {
	dirs, _ := filepath.Glob(filepath.Join(w.o.Work, "builds", "*"))
	for _, d := range dirs {
		repo, err := gitrepo.Open(ctx, filepath.Join(d, "mirror.git"))
		if err != nil {
			continue
		}
		r, err := gitjob.New(gitjob.Options{Repo: repo, Logs: filepath.Join(d, "logs"), Work: filepath.Join(d, "slots")})
		if err == nil {
			_ = r.Prune(ctx)
		}
	}
}

// heartbeat says, every lease, what the worker has in hand: the hosts
// give jobs to the workers they hear, with a free slot.
func (w *Worker) heartbeat(ctx context.Context) {
	say := time.NewTicker(w.o.Lease)
	defer say.Stop()
	w.say(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-say.C:
			w.say(ctx)
		}
	}
}

// poll is how often the worker looks for what it waits for in NATS (the
// queue made, a new label set): a request each, cheap.
func (w *Worker) poll() time.Duration { return min(w.o.Lease, time.Second) }

func (w *Worker) say(ctx context.Context) {
	if err := w.q.SayWorker(ctx, w.Status()); err != nil && ctx.Err() == nil {
		w.log.Debug().Err(err).Msg("cannot say the worker is there")
	}
}

// sayNow says what the worker has in hand at once, not at the next
// lease: cluster status shows a job as soon as it is taken.
func (w *Worker) sayNow(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_ = w.q.SayWorker(ctx, w.Status())
}

// Status is what the worker says of itself.
func (w *Worker) Status() workq.WorkerStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := workq.WorkerStatus{ID: w.o.ID, Labels: slices.Clone(w.labels), Parallel: w.o.Parallel, Jobs: []workq.InHand{},
		Done: w.counts.done, Duplicates: w.counts.duplicates, Infra: w.counts.infra, Refused: w.counts.refused, Again: w.counts.again,
		UpMS: time.Since(w.start).Milliseconds(), At: w.o.Now(), JWT: w.o.JWT}
	st.Sandbox = "on"
	if w.o.Unconfined {
		st.Sandbox = "off"
	}
	for _, h := range w.inHand {
		st.Jobs = append(st.Jobs, workq.InHand{Job: h.job.ID, Build: h.job.Build, Component: h.job.Component, Run: h.job.Run,
			ForMS: time.Since(h.since).Milliseconds()})
	}
	sort.Slice(st.Jobs, func(i, j int) bool { return st.Jobs[i].Job < st.Jobs[j].Job })
	return st
}

// Counts are the worker's counters: results stored, results dropped
// because another was stored first, jobs it could not do, jobs refused.
func (w *Worker) Counts() (done, duplicates, infra, refused uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.counts.done, w.counts.duplicates, w.counts.infra, w.counts.refused
}

// slot takes one job at a time, of those given to it.
func (w *Worker) slot(ctx context.Context) {
	said := false
	for ctx.Err() == nil {
		msg, err := w.q.Take(ctx, w.o.ID, max(w.o.Lease, time.Second))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if !errors.Is(err, workq.ErrNoConsumer) {
				w.log.Debug().Err(err).Msg("cannot take a job now")
			} else if !said {
				w.log.Info().Msg("waiting for a host to give this worker a job")
				said = true
			}
			select {
			case <-ctx.Done():
			case <-time.After(w.poll()):
			}
			continue
		}
		if msg != nil {
			w.handle(ctx, msg)
		}
	}
}

// handle runs one job it was given, from its message to its ack.
func (w *Worker) handle(ctx context.Context, msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		_ = msg.Nak()
		return
	}
	var job workq.Job
	if err := json.Unmarshal(msg.Data(), &job); err != nil {
		w.refuse(msg, "a job that is not JSON: "+err.Error())
		_ = msg.Term()
		return
	}
	log := w.log.With().Str("job", job.ID).Str("build", job.Build).Str("component", job.Component).Logger()
	if job.Worker != w.o.ID {
		// Only a host puts jobs on this worker's subject; one that names
		// another worker is not this one's to run, nor to answer.
		w.refuse(msg, fmt.Sprintf("a job given to worker %q, on this worker's subject", job.Worker))
		_ = msg.Term()
		return
	}
	if err := job.Check(); err != nil {
		w.refuse(msg, err.Error())
		if job.V != workq.Version {
			// A worker of the host's version may read it.
			_ = msg.NakWithDelay(w.o.Lease)
			return
		}
		w.storeInfra(ctx, msg, job, meta.Sequence.Stream, "the worker refused the job: "+err.Error())
		return
	}
	if job.Sandbox.Required && w.o.Unconfined {
		// Its label keeps such a job from a worker like this one: this is
		// the second lock on the same door.
		w.refuse(msg, "the host requires its checks sandboxed, and this worker runs them unconfined (host.sandbox: off)")
		_ = msg.NakWithDelay(w.o.Lease)
		return
	}
	if slices.Contains(job.Avoid, w.o.ID) && meta.NumDelivered < 3 {
		_ = msg.NakWithDelay(time.Second) // this worker could not do it before: another first
		return
	}
	if meta.NumDelivered > maxDeliveries {
		w.storeInfra(ctx, msg, job, meta.Sequence.Stream,
			fmt.Sprintf("the job was given to workers %d times, and none finished it (each stopped, or stalled past cluster.lease)", meta.NumDelivered-1))
		return
	}
	if x, err := w.q.Settled(ctx, job.Build, job.ID); err == nil && x != nil {
		// Done already (this is a delivery again after a stall), or
		// withdrawn: nothing is fetched or run.
		log.Info().Str("outcome", x.Outcome).Msg("the job is settled already: acknowledged, not run")
		_ = msg.Ack()
		return
	}
	// A job delivered again while another slot of this worker runs it (its
	// in-progress acks lost to a NATS restart past the ack wait) is that
	// slot's: its run answers and acknowledges it, the copy runs nothing.
	w.mu.Lock()
	if _, held := w.inHand[job.ID]; held {
		w.mu.Unlock()
		log.Info().Uint64("delivered", meta.NumDelivered).Msg("delivered again while this worker runs it: the run under way answers it")
		return
	}
	w.inHand[job.ID] = &inHand{job: job, since: time.Now()}
	w.mu.Unlock()
	// Its word that it took the job, before it runs: the host counts a
	// result only from a worker that said so.
	if err := w.sayTaken(ctx, job, meta.Sequence.Stream); err != nil {
		log.Warn().Err(err).Msg("cannot say the job is taken; given back")
		w.mu.Lock()
		delete(w.inHand, job.ID)
		w.mu.Unlock()
		_ = msg.NakWithDelay(w.poll())
		return
	}
	w.mu.Lock()
	if meta.NumDelivered > 1 {
		w.counts.again++
	}
	w.local++
	local := w.local
	w.mu.Unlock()
	w.sayNow(ctx)
	defer func() {
		w.mu.Lock()
		delete(w.inHand, job.ID)
		w.mu.Unlock()
		w.sayNow(context.WithoutCancel(ctx))
	}()
	log.Info().Int("run", job.Run).Uint64("delivered", meta.NumDelivered).Msg("job taken")

	jobCtx, stop := context.WithCancel(ctx)
	defer stop()
	settled := make(chan *workq.Settled, 1) // the job settled meanwhile: another worker's result taken, or withdrawn
	keepDone := make(chan struct{})
	go func() { defer close(keepDone); w.keep(jobCtx, msg, job, stop, settled) }()
	res := w.run(jobCtx, job, meta.Sequence.Stream, local)
	select {
	case x := <-settled:
		stop()
		<-keepDone
		if x.Outcome == workq.Cancelled {
			log.Info().Msg("the host withdrew the job (its run went stale): its run here is stopped")
		} else {
			w.mu.Lock()
			w.counts.duplicates++
			w.mu.Unlock()
			log.Info().Str("by", x.Worker).Msg("the host took another worker's result of this job: its run here is dropped")
		}
		_ = msg.Ack()
		return
	default:
	}
	if ctx.Err() != nil {
		stop()
		<-keepDone
		_ = msg.Nak() // stopping: to another worker at once
		return
	}
	// Keep the job in hand while the result is stored.
	w.store(jobCtx, msg, job, res)
	stop()
	<-keepDone
}

// keep tells JetStream the job is still in hand, a third of the ack wait
// apart, and watches for the host to settle it otherwise: another
// worker's result taken, or the job withdrawn; then the run here stops.
func (w *Worker) keep(ctx context.Context, msg jetstream.Msg, job workq.Job, stop context.CancelFunc, settled chan<- *workq.Settled) {
	every := time.Second
	if wait, err := w.q.AckWait(ctx, w.o.ID); err == nil && wait > 0 {
		every = max(wait/3, 50*time.Millisecond)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_ = msg.InProgress()
		if x, err := w.q.Settled(ctx, job.Build, job.ID); err == nil && x != nil && x.Worker != w.o.ID {
			settled <- x
			stop()
			return
		}
	}
}

// sayTaken stores the worker's signed word that it took job, given as
// message seq.
func (w *Worker) sayTaken(ctx context.Context, job workq.Job, seq uint64) error {
	t := workq.Taken{Job: job.ID, Worker: w.o.ID, Seq: seq, Commit: job.Commit}
	t.Key, t.Sig = workq.Sign(w.o.Key, t.Signed())
	return w.q.SayTaken(ctx, job.Build, t)
}

// storeInfra stores that the worker could not do job, given as message
// seq, saying first that it took it (else the host would not count it).
func (w *Worker) storeInfra(ctx context.Context, msg jetstream.Msg, job workq.Job, seq uint64, why string) {
	if err := w.sayTaken(ctx, job, seq); err != nil {
		_ = msg.NakWithDelay(w.poll())
		return
	}
	w.store(ctx, msg, job, workq.Result{Job: job.ID, Worker: w.o.ID, Seq: seq, Commit: job.Commit, Outcome: workq.Infra, Why: why})
}

// store stores res as the job's result, signed, trying until it is
// stored (NATS may be away a while: nothing is lost meanwhile, the job is
// still in hand), then acknowledges the job.
func (w *Worker) store(ctx context.Context, msg jetstream.Msg, job workq.Job, res workq.Result) {
	log := w.log.With().Str("job", job.ID).Logger()
	res.Key, res.Sig = workq.Sign(w.o.Key, res.Signed())
	for {
		stored, err := w.q.Store(ctx, job.Build, res)
		switch {
		case err == nil && stored:
			w.mu.Lock()
			w.counts.done++
			if res.Outcome == workq.Infra {
				w.counts.infra++
			}
			w.mu.Unlock()
			log.Info().Str("outcome", res.Outcome).Str("why", res.Why).Msg("result stored")
		case err == nil:
			// This worker ran the job before (given it again after a
			// stall): its first result stands.
			w.mu.Lock()
			w.counts.duplicates++
			w.mu.Unlock()
			log.Info().Msg("this worker stored a result of this job before: this one is dropped")
		default:
			if ctx.Err() != nil {
				return // not acknowledged: given to another worker
			}
			log.Warn().Err(err).Msg("cannot store the result yet; trying again")
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		break
	}
	ackCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := msg.DoubleAck(ackCtx); err != nil {
		// It comes again to some worker, which finds the result stored
		// and acknowledges it.
		log.Warn().Err(err).Msg("cannot acknowledge the job; the next to take it finds it done")
	}
}

// refuse counts a job this worker will not run, and says why.
func (w *Worker) refuse(msg jetstream.Msg, why string) {
	w.mu.Lock()
	w.counts.refused++
	w.mu.Unlock()
	w.log.Error().Str("subject", msg.Subject()).Str("why", why).Msg("refused a job")
}

// secrets are what no log of the job may show: the values it hands the
// checks (8 bytes or more), and the token it fetches with.
func secrets(job workq.Job) []checks.Secret {
	out := []checks.Secret{{Name: "the host's fetch token", Value: job.Fetch.Token}}
	for _, e := range job.Env {
		name, value, set := strings.Cut(e, "=")
		if !set {
			value = os.Getenv(name)
		}
		if value != "" {
			out = append(out, checks.Secret{Name: "host.env " + name, Value: value})
		}
	}
	return out
}
