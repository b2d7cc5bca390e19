// Package remote is foreman host's side of its workers: with cluster.nats
// set, the host runs no check itself. Everything that needs host.repo
// stays in the host (resolving refs, merges, rebases, the train's chains,
// landings); only running the checks on a commit moves, through the job
// queue (package workq), to foreman worker processes (package worker).
//
// For each commit to check, the host pins the commit under
// refs/foreman/jobs/<run> (so that a worker can fetch it by name, and no gc
// takes it while the job lives), serves the repository read-only over
// git's smart HTTP (GitServer), and puts one job per label set on the
// queue, each given to one worker it names (assign.go). It takes the
// result stored for each job by the worker it gave it to, checks that it
// answers the job (its id, the message the worker was given, the commit
// and its tree, signed by a worker it trusts and the account has not
// revoked: trust.go), copies the logs into host.logs, and answers as the
// checks run here would. A result that does not answer the job is refused and
// counted, and the job is tried again (never charged to the builder); so
// is a job a worker could not do.
package remote

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host/checks"
	"github.com/agentforeman/foreman/internal/host/gitjob"
	"github.com/agentforeman/foreman/internal/host/receipt"
	"github.com/agentforeman/foreman/internal/natsauth"
	"github.com/agentforeman/foreman/internal/workq"
)

// Options configure the host's side of its workers.
type Options struct {
	Queue    *workq.Queue
	Repo     *gitrepo.Repo // host.repo: a job's commit is pinned there while the job lives
	Serve    string        // host.serve: where the repository is served to the workers
	ServeURL string        // host.serve_url: how they reach it ("": http:// and Serve's address)
	Build    string        // build.name: the queue's subjects and keys are the build's
	Host     string        // the host's sender id, for people
	Name     string        // host.name
	Target   string

	Checks   [][]string
	Labels   [][]string // per check: what a worker must have to run it
	Env      []string   // host.env, as written
	Timeout  time.Duration
	LogLimit int64
	Sandbox  workq.Sandbox // what the host requires of the workers' sandbox
	Logs     string        // host.logs: the workers' logs are copied there

	MaxParallel int
	// Trust is the workers whose results count (host.workers), each by
	// the key it signs with; nil: any worker's, unsigned, and then only
	// NATS's users (one per worker) keep one worker from another's jobs.
	Trust *workq.Trust
	// Lease is the consumers' ack wait (cluster.lease), and how often the
	// host looks for results its watch may have missed and says it is
	// there.
	Lease time.Duration
	// Claims reads the account's JWT as the server holds it now (nil, nil
	// when the server keeps none: not operator mode): a worker revoked
	// there, or not made by the account's worker signing key, is given no
	// job and its results count for nothing.
	Claims func(context.Context) (*jwt.AccountClaims, error)
	Logger zerolog.Logger
}

// group is the checks that ask for one label set: one job per commit.
type group struct {
	labels []string // what the job asks for (Sandboxed included)
	checks [][]string
	at     []int // each check's position in host.checks: failures are reported in that order
}

// Remote runs the host's checks on workers: a gitjob.Checker.
type Remote struct {
	o      Options
	groups []group
	log    zerolog.Logger
	start  time.Time
	moved  chan struct{} // pinged when a job is given or taken: say so at once

	mu       sync.Mutex
	git      *GitServer // while it leads the workers (Start to Close)
	startRun int        // the highest run of the host's lives before this one
	stop     context.CancelFunc
	done     chan struct{}

	waiting map[string]*waiter   // by job id
	ended   map[string]bool      // jobs given in this life that ended: a result now is late
	avoid   map[string][]string  // by commit: workers that could not do a job on it
	checked map[string]time.Time // by worker: when its consumer was last checked

	pool   map[string]*pooled   // the workers, as last heard
	gaveTo map[string]*pooled   // each worker as it was when it was last given a job
	given  map[string]int       // by worker: the jobs this host gave it that live
	last   map[string]time.Time // by worker: when it was last given a job
	wake   chan struct{}        // closed when a worker may be free
	claims *jwt.AccountClaims   // the account's JWT, as last read (nil: none)
	// unassigned counts the jobs waiting for a free worker.
	unassigned int

	results uint64
	refused uint64
	late    uint64
	retried uint64
}

// waiter is a job the host waits for.
type waiter struct {
	job    workq.Job
	tree   string // the tree of its commit
	seq    uint64 // its message in the stream
	since  time.Time
	done   chan<- taken // where its result goes, once: shared by the run's jobs
	git    *GitServer   // which granted its fetch token
	worker string       // the one worker it was given to
	// released: it no longer counts as one of its worker's jobs (r.mu).
	released bool
	ignored  map[string]bool // the results of it ignored, by key (r.mu)
}

// taken is a result taken for the job of a run's group.
type taken struct {
	group int
	res   *workq.Result
}

// New makes the host's side of its workers; nothing is given to them
// until Start.
func New(o Options) *Remote {
	if o.Lease <= 0 {
		o.Lease = 3 * time.Second
	}
	return &Remote{o: o, log: o.Logger, start: time.Now(), waiting: map[string]*waiter{}, ended: map[string]bool{},
		avoid: map[string][]string{}, checked: map[string]time.Time{}, moved: make(chan struct{}, 1), groups: groups(o.Checks, o.Labels, o.Sandbox.Required),
		pool: map[string]*pooled{}, gaveTo: map[string]*pooled{}, given: map[string]int{}, last: map[string]time.Time{}, wake: make(chan struct{})}
}

// Start makes this host the one that gives the build's jobs (the host
// alone does at its start; a standby once it leads): it serves host.repo
// to the workers, drops the jobs a host of the build left queued and
// their pins (what is still owed is given again), makes the consumers of
// its label sets, and follows the results. startRun is the highest run of
// the host's lives before: a result for a job of such a run is late (a
// worker finished what a host gave before), not forged.
func (r *Remote) Start(ctx context.Context, startRun int) error {
	o := r.o
	if err := o.Queue.Purge(ctx, o.Build); err != nil {
		return fmt.Errorf("dropping the jobs a host of %s left queued: %w", o.Build, err)
	}
	if err := o.Repo.DeleteRefs(ctx, pinPrefix); err != nil {
		return fmt.Errorf("host.repo: deleting the pins a host left: %w", err)
	}
	if ac, ok := r.readClaims(ctx); !ok {
		return errors.New("cannot read the account's JWT from NATS (" + natsauth.ClaimsSubject + "): the host must know which workers are revoked")
	} else if ac == nil && o.Claims != nil {
		r.log.Warn().Msg("the NATS server keeps no account JWT (not operator mode, or a memory resolver): a worker revoked is not known as such here (docs/NATS.md)")
	}
	if o.Trust == nil {
		r.log.Warn().Msg("host.workers is not set: a result counts from any worker, unsigned; only NATS users of their own keep one worker from another's jobs (docs/NATS.md)")
	}
	git, err := ServeGit(o.Repo.GitDir(), o.Serve, o.ServeURL)
	if err != nil {
		return err
	}
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	results, err := o.Queue.WatchResults(bg, o.Build)
	if err != nil {
		stop()
		_ = git.Close()
		return fmt.Errorf("following the workers' results: %w", err)
	}
	workers, err := o.Queue.WatchWorkers(bg)
	if err != nil {
		stop()
		_ = git.Close()
		return fmt.Errorf("following the workers: %w", err)
	}
	done := make(chan struct{})
	r.mu.Lock()
	r.git, r.startRun, r.stop, r.done = git, startRun, stop, done
	r.mu.Unlock()
	go r.follow(bg, results, workers, done)
	return nil
}

// checkConsumer makes the consumer of worker's jobs, or puts it back as
// it must be, and says what it put back.
func (r *Remote) checkConsumer(ctx context.Context, worker string) error {
	put, err := r.o.Queue.Consumer(ctx, worker, r.o.Lease)
	for _, p := range put {
		r.log.Warn().Str("worker", worker).Msg("the job queue: " + p)
	}
	if err != nil {
		return fmt.Errorf("the job queue's consumer for worker %s: %w", worker, err)
	}
	r.mu.Lock()
	r.checked[worker] = time.Now()
	r.mu.Unlock()
	return nil
}

// URL is where the workers fetch from ("" before Start).
func (r *Remote) URL() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.git == nil {
		return ""
	}
	return r.git.URL()
}

// LabelSets are the label sets the host's jobs ask for.
func (r *Remote) LabelSets() []string {
	var out []string
	for _, g := range r.groups {
		out = append(out, workq.LabelSet(g.labels))
	}
	return out
}

// Close stops giving jobs: it stops following results and serving the
// repository, and says the host is gone. Start may follow again.
func (r *Remote) Close() {
	r.mu.Lock()
	git, stop, done := r.git, r.stop, r.done
	r.git, r.stop, r.done = nil, nil, nil
	r.mu.Unlock()
	if git == nil {
		return
	}
	stop()
	<-done
	_ = git.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r.o.Queue.HostGone(ctx, r.o.Build)
}

// groups splits the checks by the labels they ask for, in the order each
// set first appears: the checks of one set run together, in order, on one
// worker that has its labels.
func groups(cmds [][]string, labels [][]string, sandboxed bool) []group {
	var out []group
	index := map[string]int{}
	for i, argv := range cmds {
		var want []string
		if i < len(labels) {
			want = slices.Clone(labels[i])
		}
		if sandboxed {
			want = append(want, workq.Sandboxed)
		}
		set := workq.LabelSet(want)
		g, ok := index[set]
		if !ok {
			g = len(out)
			index[set] = g
			out = append(out, group{labels: workq.Labels(set)})
		}
		out[g].checks = append(out[g].checks, argv)
		out[g].at = append(out[g].at, i)
	}
	if len(out) == 0 {
		// No checks: nothing to send; Check passes at once.
		return nil
	}
	return out
}

// failedAt is the position in host.checks of the group's check that
// failed, named as checks name it; the last of the group's when none is.
func (g group) failedAt(command string) int {
	for i, argv := range g.checks {
		if checks.Quote(argv) == command {
			return g.at[i]
		}
	}
	return g.at[len(g.at)-1]
}

// pinPrefix holds the commits of the jobs that live.
const pinPrefix = "refs/foreman/jobs/"

func pinRef(run int) string { return pinPrefix + strconv.Itoa(run) }

// Check has the checks on req.Commit run by workers, one job per label
// set, and answers as gitjob's own: the verdict, the flaky checks, the
// logs (copied into host.logs). An error is a job no worker could do, or
// that the queue would not take: the core tries the run again later,
// never blaming the builder.
func (r *Remote) Check(ctx context.Context, req gitjob.CheckRequest) (gitjob.Checked, error) {
	if len(r.groups) == 0 {
		return gitjob.Checked{Result: checks.Result{Passed: true}}, nil
	}
	r.mu.Lock()
	git := r.git
	r.mu.Unlock()
	if git == nil {
		return gitjob.Checked{}, errors.New("this host does not give the build's jobs to workers now")
	}
	j := req.Job
	tree, err := r.o.Repo.TreeOf(ctx, req.Commit)
	if err != nil {
		return gitjob.Checked{}, fmt.Errorf("reading the tree of %s: %w", short(req.Commit), err)
	}
	if err := r.o.Repo.SetRef(ctx, pinRef(j.Run), req.Commit, "foreman host: job for "+j.Component); err != nil {
		return gitjob.Checked{}, fmt.Errorf("pinning %s for the workers: %w", short(req.Commit), err)
	}
	defer func() {
		_ = r.o.Repo.DeleteRef(context.WithoutCancel(ctx), pinRef(j.Run), req.Commit, "foreman host: job ended")
	}()
	ws := make([]*waiter, len(r.groups))
	defer func() {
		for _, w := range ws {
			if w != nil {
				r.forget(w)
			}
		}
	}()
	done := make(chan taken, len(r.groups))
	for g := range r.groups {
		w, err := r.give(ctx, req, tree, g, git, done)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Warn().Err(err).Int("run", j.Run).Msg("cannot give the job to a worker: the run is tried again")
			}
			r.withdraw(ws)
			return gitjob.Checked{}, err
		}
		ws[g] = w
	}
	res := make([]*workq.Result, len(ws))
	for range ws {
		var t taken
		select {
		case t = <-done:
		case <-ctx.Done():
			r.withdraw(ws)
			return gitjob.Checked{}, ctx.Err()
		}
		res[t.group] = t.res
		if x := t.res; x.Outcome == workq.Infra {
			r.withdraw(ws) // the others are wasted now: the run is tried again whole
			r.mu.Lock()
			r.retried++
			if x.Worker != "" && len(r.avoid) < 4096 && !slices.Contains(r.avoid[req.Commit], x.Worker) {
				r.avoid[req.Commit] = append(r.avoid[req.Commit], x.Worker)
			}
			r.mu.Unlock()
			who := "a worker"
			if x.Worker != "" {
				who = "worker " + x.Worker
			}
			what := short(req.Commit)
			if len(r.groups) > 1 {
				what += " (" + labelsSaid(r.groups[t.group].labels) + ")"
			}
			r.log.Warn().Str("job", t.res.Job).Str("worker", x.Worker).Str("why", x.Why).Msg("a worker could not check the commit: the run is tried again")
			return gitjob.Checked{}, fmt.Errorf("%s could not check %s: %s", who, what, x.Why)
		}
	}
	return r.verdict(ctx, ws, res), nil
}

// give puts the job of group g for req on the queue.
func (r *Remote) give(ctx context.Context, req gitjob.CheckRequest, tree string, g int, git *GitServer, done chan<- taken) (*waiter, error) {
	j := req.Job
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	first := gitjob.LogName(j, 0)
	if g > 0 {
		first = strings.TrimSuffix(first, ".log") + ".g" + strconv.Itoa(g) + ".log"
	}
	grp := r.groups[g]
	r.mu.Lock()
	avoid := slices.Clone(r.avoid[req.Commit])
	r.mu.Unlock()
	worker, err := r.choose(ctx, grp.labels, avoid)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	_, made := r.checked[worker]
	p := r.pool[worker]
	r.gaveTo[worker] = p
	// The fetch token is the worker's alone: its trusted key's, or,
	// without host.workers, the key of the user JWT the account vouched
	// for.
	key := ""
	if r.o.Trust != nil {
		key = r.o.Trust.Key(worker)
	} else if r.claims != nil && p != nil {
		key = jwtSubject(p.st.JWT)
	}
	r.mu.Unlock()
	if !made {
		if err := r.checkConsumer(ctx, worker); err != nil {
			r.release(worker)
			return nil, err
		}
	}
	id := fmt.Sprintf("%d-%d-%s", j.Run, g, hex.EncodeToString(nonce))
	job := workq.Job{V: workq.Version, ID: id, Worker: worker,
		Build: r.o.Build, Host: r.o.Host, Run: j.Run, Group: g,
		Component: j.Component, Ref: j.Ref, Owner: j.Owner, Commit: req.Commit, Base: req.Base, Target: r.o.Target,
		Checks: grp.checks, Labels: grp.labels, Env: r.o.Env, TimeoutMS: r.o.Timeout.Milliseconds(),
		LogLimit: r.o.LogLimit, Retries: j.Retries(), Sandbox: r.o.Sandbox,
		Fetch: workq.Fetch{URL: git.URL(), Ref: pinRef(j.Run), Token: git.Grant(pinRef(j.Run), id, key)},
		Avoid: avoid, Log: first}
	w := &waiter{job: job, tree: tree, since: time.Now(), done: done, git: git, worker: worker}
	r.mu.Lock()
	r.waiting[job.ID] = w
	r.mu.Unlock()
	seq, err := r.o.Queue.Publish(ctx, job)
	if err != nil {
		// JetStream may have stored it all the same (its answer lost, or
		// the run gone stale meanwhile): a worker that takes it finds it
		// withdrawn.
		r.withdraw([]*waiter{w})
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("the job queue (NATS) did not take the job: %w", err)
	}
	r.mu.Lock()
	w.seq = seq
	r.mu.Unlock()
	r.log.Debug().Str("job", job.ID).Str("component", j.Component).Str("labels", workq.LabelSet(grp.labels)).Str("worker", worker).Uint64("seq", seq).Msg("job given to a worker")
	r.changed()
	return w, nil
}

// forget stops waiting for w: a result for it from now on is late, and
// its fetch token fetches nothing.
func (r *Remote) forget(w *waiter) {
	w.git.Revoke(w.job.Fetch.Token)
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.changed()
	if !w.released {
		w.released = true
		if r.given[w.worker]--; r.given[w.worker] <= 0 {
			delete(r.given, w.worker)
		}
		r.poolChanged()
	}
	if r.waiting[w.job.ID] == w {
		delete(r.waiting, w.job.ID)
		if len(r.ended) > 65536 {
			clear(r.ended)
		}
		r.ended[w.job.ID] = true
	}
}

// withdraw stores the cancellation of the jobs of ws that have no result
// as their result, so that a worker running one stops (it looks for its
// job's result while it runs), one taking it later drops it at once, and
// a result of a worker's is dropped.
func (r *Remote) withdraw(ws []*waiter) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, w := range ws {
		if w == nil {
			continue
		}
		r.mu.Lock()
		_, live := r.waiting[w.job.ID]
		r.mu.Unlock()
		if !live {
			continue
		}
		r.forget(w)
		// The job stays queued (a host's user need not delete messages):
		// a worker that takes it finds it withdrawn and acknowledges it
		// at once, unrun.
		if _, err := r.o.Queue.Settle(ctx, r.o.Build, workq.Settled{Job: w.job.ID, Outcome: workq.Cancelled}); err != nil {
			r.log.Warn().Err(err).Str("job", w.job.ID).Msg("cannot mark the job withdrawn; a worker may run it to its end, and its result is dropped")
		}
	}
}

// verdict is the checks' end, from every group's result: they passed if
// every group passed; else the failure of the check that comes first in
// host.checks. Its logs come last, so that the verdict names them.
func (r *Remote) verdict(ctx context.Context, ws []*waiter, res []*workq.Result) gitjob.Checked {
	decide, first := 0, -1
	for g, x := range res {
		if x.Outcome == workq.Passed {
			continue
		}
		if at := r.groups[g].failedAt(x.Command); first < 0 || at < first {
			decide, first = g, at
		}
	}
	out := gitjob.Checked{Sandbox: r.sandbox()}
	for g := range res {
		if g != decide {
			out.Logs = append(out.Logs, r.copyLogs(ctx, ws[g].job, res[g])...)
		}
		out.Flaky = append(out.Flaky, res[g].Flaky...)
		if who := "worker " + res[g].Worker; !slices.Contains(out.RanOn, who) {
			out.RanOn = append(out.RanOn, who)
		}
	}
	out.Logs = append(out.Logs, r.copyLogs(ctx, ws[decide].job, res[decide])...)
	out.Commands = r.commands(res)
	x := res[decide]
	out.Result = checks.Result{Passed: x.Outcome == workq.Passed, Command: x.Command, Line: x.Line, Silent: x.Silent,
		TimedOut: x.TimedOut, Stopped: x.Stopped, Duration: time.Duration(x.TookMS) * time.Millisecond,
		NotRun: x.NotRun, Program: x.Program, Interpreter: x.Interpreter}
	return out
}

// commands is how each check of host.checks ended, in its order, from the
// result of the group that ran it: the core decides from these what
// passed, not from one word of the workers'.
func (r *Remote) commands(res []*workq.Result) []receipt.Command {
	n := 0
	for _, g := range r.groups {
		n += len(g.at)
	}
	out := make([]receipt.Command, n)
	for gi, g := range r.groups {
		for i, c := range gitjob.Results(g.checks, res[gi].Outcome == workq.Passed, res[gi].Command) {
			out[g.at[i]] = c
		}
	}
	return out
}

// sandbox names the confinement the host requires of its workers, as a
// receipt records it: a digest of what the jobs ask ("off" when they ask
// none).
func (r *Remote) sandbox() string {
	if !r.o.Sandbox.Required {
		return "off"
	}
	data, _ := json.Marshal(r.o.Sandbox)
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// copyLogs copies a job's logs from NATS into host.logs, under the names
// the host gives them (never a name a worker chose), each checked against
// the size and digest the worker signed. A log that cannot be copied is
// replaced by a note that says why: the verdict stands.
func (r *Remote) copyLogs(ctx context.Context, j workq.Job, x *workq.Result) []string {
	var out []string
	for try, l := range x.Logs {
		dst := filepath.Join(r.o.Logs, workq.TryLog(j.Log, try))
		var err error
		switch {
		case l.Subject != workq.LogSubject(x.Worker):
			err = fmt.Errorf("the worker named %q, which is not where its logs go", l.Subject)
		case l.Name != workq.TryLog(j.Log, try):
			err = fmt.Errorf("the worker named log %q, which is not this try's", l.Name)
		default:
			err = r.o.Queue.GetLog(ctx, r.o.Build, j.ID, l, dst)
		}
		if err != nil {
			_ = os.WriteFile(dst, []byte(fmt.Sprintf("[the log of this check, run by worker %s, could not be copied from NATS: %v]\n", x.Worker, err)), 0o644)
		}
		out = append(out, dst)
	}
	return out
}

// follow takes the results as the watch brings them, hears the workers,
// and, every lease, reads the account's JWT (revocations), looks for the
// results of the jobs it waits for (a watch cut by a NATS restart may
// miss one) and says the host is there.
func (r *Remote) follow(ctx context.Context, results <-chan workq.Stored, workers <-chan workq.WorkerSeen, done chan struct{}) {
	defer close(done)
	// The workers' watch has a context of its own: one that stopped
	// bringing words (a NATS restart) is started again.
	var watch watchCtx
	wctx := watch.renew(ctx)
	defer watch.stop()
	tick := time.NewTicker(r.o.Lease)
	defer tick.Stop()
	r.say(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case s, ok := <-results:
			if !ok {
				results = nil
				// The watch ended (NATS went away for good, or the bucket
				// did): start it again at the next tick.
				continue
			}
			if s.Job == "" {
				continue
			}
			if s.Err != nil {
				r.refuse(s.Job, s.Worker, s.Err.Error())
				continue
			}
			r.take(ctx, s)
		case s, ok := <-workers:
			if !ok {
				workers = nil
				continue
			}
			r.heard(s)
		case <-r.moved:
			r.say(ctx)
		case <-tick.C:
			if results == nil {
				if w, err := r.o.Queue.WatchResults(ctx, r.o.Build); err == nil {
					results = w
				}
			}
			if r.recheck(ctx) && workers != nil {
				r.log.Info().Msg("the workers' watch brought nothing while they spoke: started again")
				wctx = watch.renew(ctx)
				workers = nil
			}
			if workers == nil {
				if w, err := r.o.Queue.WatchWorkers(wctx); err == nil {
					workers = w
				}
			}
			r.readClaims(ctx)
			r.sweep(ctx)
			r.say(ctx)
		}
	}
}

// watchCtx is the context of the workers' watch, ended when it is
// started again.
type watchCtx struct{ cancel context.CancelFunc }

func (w *watchCtx) renew(parent context.Context) context.Context {
	w.stop()
	ctx, cancel := context.WithCancel(parent)
	w.cancel = cancel
	return ctx
}

func (w *watchCtx) stop() {
	if w.cancel != nil {
		w.cancel()
	}
}

// changed has what the host says of itself said again soon.
func (r *Remote) changed() {
	select {
	case r.moved <- struct{}{}:
	default:
	}
}

// sweep reads the results of every job waited for, checks the consumer
// of a worker whose job has waited more than two leases, and gives up on
// the jobs of a worker that is lost (stopped, silent, revoked): the run
// is tried again, elsewhere.
func (r *Remote) sweep(ctx context.Context) {
	r.mu.Lock()
	ids := make([]string, 0, len(r.waiting))
	var check []string
	var lost []*waiter
	var why []string
	for id, w := range r.waiting {
		ids = append(ids, id)
		if y := r.lost(w.worker); y != "" && w.seq != 0 {
			lost, why = append(lost, w), append(why, y)
			continue
		}
		if time.Since(w.since) > 2*r.o.Lease && time.Since(r.checked[w.worker]) > r.o.Lease && !slices.Contains(check, w.worker) {
			check = append(check, w.worker)
		}
	}
	r.mu.Unlock()
	for i, w := range lost {
		r.giveUp(ctx, w, why[i])
	}
	for _, worker := range check {
		if err := r.checkConsumer(ctx, worker); err != nil && ctx.Err() == nil {
			r.log.Warn().Err(err).Msg("cannot check the job queue's consumer")
		}
	}
	for _, id := range ids {
		all, err := r.o.Queue.Results(ctx, r.o.Build, id)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Debug().Err(err).Str("job", id).Msg("cannot read a job's results now")
			}
			return
		}
		for _, s := range all {
			if s.Err == nil {
				r.take(ctx, s)
			}
		}
	}
}

// A result is taken, refused, or ignored:
type judged int

const (
	accepted judged = iota
	// ignored: not the word of the worker that took the job (another
	// worker's, one that never took it, a made-up job): counted and
	// logged, never a verdict, and the job still waits for its worker.
	ignored
	// refused: the worker took the job, and its result cannot count (it
	// is not trusted, or the result does not answer the job): the job
	// is tried again, never charged to the builder.
	refused
	// judgedLater: it cannot be judged now (NATS did not answer).
	judgedLater
)

// take judges a stored result of a job the host waits for and, if it
// counts, hands it to the one waiting.
func (r *Remote) take(ctx context.Context, s workq.Stored) {
	x := s.Result
	r.mu.Lock()
	w := r.waiting[s.Job]
	if w == nil {
		late := r.ended[s.Job] || runOf(s.Job) <= r.startRun
		if late {
			r.late++
		}
		r.mu.Unlock()
		if !late {
			r.refuse(s.Job, s.Worker, "no job of this host has that id")
		}
		return
	}
	if w.seq == 0 {
		// Its publish has not returned yet (a worker was that quick): the
		// next sweep takes it, once the message it was given is known.
		r.mu.Unlock()
		return
	}
	job, seq, tree := w.job, w.seq, w.tree
	r.mu.Unlock()
	verdict, why := r.judge(ctx, s, job, seq, tree)
	if verdict == judgedLater {
		return
	}
	r.mu.Lock()
	if r.waiting[s.Job] != w {
		r.mu.Unlock() // taken meanwhile (the watch and a sweep)
		return
	}
	if verdict == ignored {
		// Counted and said once: the watch and every sweep bring it.
		if w.ignored[s.Key] {
			r.mu.Unlock()
			return
		}
		if w.ignored == nil {
			w.ignored = map[string]bool{}
		}
		w.ignored[s.Key] = true
		r.refused++
		r.mu.Unlock()
		r.log.Warn().Str("job", s.Job).Str("worker", s.Worker).Str("why", why).Msg("ignored a result: not the word of the worker that took the job")
		return
	}
	delete(r.waiting, s.Job)
	r.ended[s.Job] = true
	r.changed()
	if verdict == accepted {
		r.results++
		w.worker = x.Worker
		r.mu.Unlock()
		w.done <- taken{group: job.Group, res: x}
		r.settle(ctx, workq.Settled{Job: s.Job, Outcome: workq.TakenBy, Worker: x.Worker})
		return
	}
	r.refused++
	r.mu.Unlock()
	r.log.Warn().Str("job", s.Job).Str("worker", x.Worker).Str("why", why).Msg("refused a worker's result")
	w.done <- taken{group: job.Group, res: &workq.Result{Job: s.Job, Outcome: workq.Infra, Worker: x.Worker, Why: "its result was refused: " + why}}
	r.settle(ctx, workq.Settled{Job: s.Job, Outcome: workq.Cancelled})
}

// judge decides whether s answers the job the host gave as message seq:
// stored under the key of the worker it names, by a worker that said it
// took that message before it ran, both signed with the key host.workers
// trusts that worker with, for the job's commit and tree.
func (r *Remote) judge(ctx context.Context, s workq.Stored, job workq.Job, seq uint64, tree string) (judged, string) {
	x := s.Result
	switch {
	case x.Worker != s.Worker:
		return ignored, fmt.Sprintf("it names worker %s, under the key of worker %s", x.Worker, s.Worker)
	case x.Job != s.Job:
		return ignored, fmt.Sprintf("it names job %s, under the key of job %s", x.Job, s.Job)
	case s.Worker != job.Worker:
		return ignored, fmt.Sprintf("the job was given to worker %s, not %s", job.Worker, s.Worker)
	}
	t, err := r.o.Queue.Taken(ctx, r.o.Build, s.Job, s.Worker)
	switch {
	case err != nil:
		return judgedLater, ""
	case t == nil:
		return ignored, fmt.Sprintf("worker %s never said it took the job", s.Worker)
	case t.Seq != seq:
		return ignored, fmt.Sprintf("worker %s took message %d of the queue, and the job was message %d", s.Worker, t.Seq, seq)
	case t.Commit != job.Commit:
		return ignored, fmt.Sprintf("worker %s took it for commit %s, and the job was %s", s.Worker, short(t.Commit), short(job.Commit))
	}
	if why, later := r.vouch(ctx, s.Worker); later {
		return judgedLater, ""
	} else if why != "" {
		return refused, why
	}
	if r.o.Trust != nil {
		key := r.o.Trust.Key(s.Worker)
		if key == "" {
			return refused, fmt.Sprintf("worker %s is not one host.workers trusts", s.Worker)
		}
		if t.Key != key || workq.Verify(key, t.Signed(), t.Sig) != nil {
			return ignored, fmt.Sprintf("its word that it took the job is not signed by worker %s's key", s.Worker)
		}
		if x.Key != key {
			return refused, fmt.Sprintf("it is not signed by worker %s's key", s.Worker)
		}
		if err := workq.Verify(key, x.Signed(), x.Sig); err != nil {
			return refused, "its signature: " + err.Error()
		}
	}
	switch {
	case x.Outcome != workq.Passed && x.Outcome != workq.Failed && x.Outcome != workq.Infra:
		return refused, fmt.Sprintf("its outcome %q is none a worker gives", x.Outcome)
	case x.Seq != seq:
		return refused, fmt.Sprintf("it names message %d of the queue, and the job was message %d", x.Seq, seq)
	case x.Outcome != workq.Infra && x.Commit != job.Commit:
		return refused, fmt.Sprintf("it is for commit %s, and the job was %s", short(x.Commit), short(job.Commit))
	case x.Outcome != workq.Infra && x.Tree != tree:
		return refused, fmt.Sprintf("it checked tree %s, and the job's commit holds %s", short(x.Tree), short(tree))
	}
	return accepted, ""
}

// settle says how a job was settled: a worker still running it stops.
func (r *Remote) settle(ctx context.Context, st workq.Settled) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := r.o.Queue.Settle(ctx, r.o.Build, st); err != nil {
		r.log.Debug().Err(err).Str("job", st.Job).Msg("cannot say the job is settled; a worker still at it runs it to its end")
	}
}

// giveUp ends the wait for w, whose worker is lost: it is withdrawn
// (settled Cancelled, so that the worker, should it come back, drops it),
// and the run is tried again, that worker avoided.
func (r *Remote) giveUp(ctx context.Context, w *waiter, why string) {
	r.mu.Lock()
	if r.waiting[w.job.ID] != w {
		r.mu.Unlock()
		return
	}
	delete(r.waiting, w.job.ID)
	r.ended[w.job.ID] = true
	r.changed()
	r.mu.Unlock()
	r.log.Warn().Str("job", w.job.ID).Str("worker", w.worker).Str("why", why).Msg("the worker given the job is lost: it is given again")
	w.done <- taken{group: w.job.Group, res: &workq.Result{Job: w.job.ID, Outcome: workq.Infra, Worker: w.worker, Why: why}}
	r.settle(ctx, workq.Settled{Job: w.job.ID, Outcome: workq.Cancelled})
}

// refuse counts a result for no job this host gave.
func (r *Remote) refuse(job, worker, why string) {
	r.mu.Lock()
	r.refused++
	r.mu.Unlock()
	r.log.Warn().Str("job", job).Str("worker", worker).Str("why", why).Msg("refused a result for no job this host gave")
}

// say stores what the host has in flight, for foreman cluster status.
func (r *Remote) say(ctx context.Context) {
	st := r.Status()
	if err := r.o.Queue.SayHost(ctx, st); err != nil && ctx.Err() == nil {
		r.log.Debug().Err(err).Msg("cannot say the host is there")
	}
}

// Status is what the host says of itself to the cluster.
func (r *Remote) Status() workq.HostStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	serve := ""
	if r.git != nil {
		serve = r.git.URL()
	}
	st := workq.HostStatus{Build: r.o.Build, Host: r.o.Host, Name: r.o.Name, Serve: serve, MaxParallel: r.o.MaxParallel,
		InFlight: []workq.HostInFlight{}, Unassigned: r.unassigned, Results: r.results, Refused: r.refused, Retried: r.retried,
		UpMS: time.Since(r.start).Milliseconds(), At: time.Now()}
	for _, g := range r.groups {
		st.LabelSets = append(st.LabelSets, workq.LabelSet(g.labels))
	}
	for _, w := range r.waiting {
		st.InFlight = append(st.InFlight, workq.HostInFlight{Job: w.job.ID, Component: w.job.Component, Run: w.job.Run,
			Labels: w.job.Labels, Worker: w.worker, WaitedMS: time.Since(w.since).Milliseconds()})
	}
	slices.SortFunc(st.InFlight, func(a, b workq.HostInFlight) int { return strings.Compare(a.Job, b.Job) })
	return st
}

// Counts are the host's counters: results taken, refused, late (for a job
// it no longer waited for), and jobs tried again.
func (r *Remote) Counts() (results, refused, late, retried uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.results, r.refused, r.late, r.retried
}

// runOf is the run a job id names; 0 if none.
func runOf(job string) int {
	run, _, _ := strings.Cut(job, "-")
	n, err := strconv.Atoi(run)
	if err != nil {
		return 0
	}
	return n
}

func orSomeone(worker string) string {
	if worker == "" {
		return "that worker"
	}
	return worker
}

func labelsSaid(labels []string) string {
	if len(labels) == 0 {
		return "any worker"
	}
	return "labels " + strings.Join(labels, ", ")
}

func short(oid string) string {
	if len(oid) > 12 {
		return oid[:12]
	}
	return oid
}
