package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/agentforeman/foreman/internal/cluster"
	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/host/gitjob"
	"github.com/agentforeman/foreman/internal/host/sandbox"
	"github.com/agentforeman/foreman/internal/workq"
)

// mirror is what the worker keeps of one build: a bare mirror of its
// host's repository, which each fetch brings up to date with only what is
// new, and the runner whose slots are worktrees of it.
type mirror struct {
	repo   *gitrepo.Repo
	runner *gitjob.Runner
	fetch  sync.Mutex // one fetch into the mirror at a time
	haves  int        // the next of the refs that remember what was fetched
	logs   string     // where its checks' logs are written, before they go to NATS
}

// keptHaves is how many of the last commits fetched the mirror keeps refs
// to: what the next fetch tells the host it has, so that the host sends
// only what is new (a mirror with no refs would be sent everything).
const keptHaves = 16

// mirrorOf opens (making it the first time) the mirror of build.
func (w *Worker) mirrorOf(ctx context.Context, build string) (*mirror, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if m := w.builds[build]; m != nil {
		return m, nil
	}
	dir := filepath.Join(w.o.Work, "builds", cluster.Key(build))
	repo, err := gitrepo.InitBare(ctx, filepath.Join(dir, "mirror.git"))
	if err != nil {
		return nil, err
	}
	runner, err := gitjob.New(gitjob.Options{Repo: repo, Logs: filepath.Join(dir, "logs"), Work: filepath.Join(dir, "slots")})
	if err != nil {
		return nil, err
	}
	m := &mirror{repo: repo, runner: runner, logs: filepath.Join(dir, "logs")}
	w.builds[build] = m
	return m, nil
}

// run does a job: fetch its commit, check it out in a slot, run its checks
// in the sandbox, store its logs; its result, not yet stored. A cancelled
// ctx stops it (its result is then not stored).
func (w *Worker) run(ctx context.Context, job workq.Job, seq uint64, local int) workq.Result {
	began := time.Now()
	res := workq.Result{Job: job.ID, Worker: w.o.ID, Seq: seq, Commit: job.Commit}
	infra := func(format string, args ...any) workq.Result {
		res.Outcome, res.Why = workq.Infra, fmt.Sprintf(format, args...)
		res.TookMS, res.At = time.Since(began).Milliseconds(), w.o.Now()
		return res
	}
	m, err := w.mirrorOf(ctx, job.Build)
	if err != nil {
		return infra("worker %s cannot keep a mirror of the repository: %v", w.o.ID, err)
	}
	fetched := "refs/foreman/fetched/" + job.ID
	m.fetch.Lock()
	headers := []string{"Authorization: Bearer " + job.Fetch.Token}
	if _, sig := workq.Sign(w.o.Key, workq.FetchSigned(job.ID, job.Fetch.Token)); sig != "" {
		// The token fetches only with the signature of the worker the
		// job was given to.
		headers = append(headers, workq.FetchHeader+": "+sig)
	}
	got, err := m.repo.Fetch(ctx, job.Fetch.URL, job.Fetch.Ref, fetched, headers...)
	if err == nil {
		_ = m.repo.SetRef(context.WithoutCancel(ctx), "refs/foreman/have/"+strconv.Itoa(m.haves), got, "fetched for a job")
		m.haves = (m.haves + 1) % keptHaves
	}
	m.fetch.Unlock()
	defer func() { _ = m.repo.DeleteRef(context.WithoutCancel(ctx), fetched, got, "job ended") }()
	switch {
	case err != nil:
		return infra("cannot fetch %s from %s: %v", short(job.Commit), job.Fetch.URL, err)
	case got != job.Commit:
		return infra("fetched %s from %s, which holds %s, not the job's commit %s", job.Fetch.Ref, job.Fetch.URL, short(got), short(job.Commit))
	}
	if res.Tree, err = m.repo.TreeOf(ctx, got); err != nil {
		return infra("cannot read the tree of %s: %v", short(got), err)
	}
	box, err := w.sandbox(job, m)
	if err != nil {
		return infra("cannot sandbox the checks here: %v", err)
	}
	if w.o.Started != nil {
		w.o.Started(job)
	}
	spec := gitjob.CheckSpec{
		// The run's number names the slot's private directories: the
		// worker's own, since two groups of one run may run here at once.
		Job:    host.Job{Run: local, Component: job.Component, Ref: job.Ref, Owner: job.Owner},
		Commit: job.Commit, Base: job.Base, Target: job.Target, Checks: job.Checks, Env: job.Env,
		Timeout: job.Timeout(), LogLimit: job.LogLimit, Retries: job.Retries, Sandbox: box, Secrets: secrets(job),
		LogName: func(_ host.Job, try int) string { return workq.TryLog(job.ID+".log", try) },
	}
	checked, err := m.runner.RunChecks(ctx, spec)
	if ctx.Err() != nil {
		return workq.Result{Outcome: workq.Cancelled}
	}
	defer func() {
		for _, l := range checked.Logs {
			_ = os.Remove(l)
		}
	}()
	if err != nil {
		return infra("worker %s cannot run the checks: %v", w.o.ID, err)
	}
	for try, l := range checked.Logs {
		stored, err := w.putLog(ctx, job, workq.TryLog(job.Log, try), l)
		if err != nil {
			if ctx.Err() != nil {
				return workq.Result{Outcome: workq.Cancelled}
			}
			return infra("worker %s cannot store the log in NATS: %v", w.o.ID, err)
		}
		res.Logs = append(res.Logs, stored)
	}
	res.Outcome = workq.Failed
	if checked.Passed {
		res.Outcome = workq.Passed
	}
	res.Command, res.Line, res.Silent, res.TimedOut, res.Stopped = checked.Command, checked.Line, checked.Silent, checked.TimedOut, checked.Stopped
	res.NotRun, res.Program, res.Interpreter = checked.NotRun, checked.Program, checked.Interpreter
	res.Flaky = checked.Flaky
	res.TookMS, res.At = time.Since(began).Milliseconds(), w.o.Now()
	return res
}

// putLog stores a log of job as name, trying again for a while: NATS may
// be restarting. A try cut short leaves chunks that no result names.
func (w *Worker) putLog(ctx context.Context, job workq.Job, name, file string) (workq.Log, error) {
	var err error
	for try := 0; try < 10; try++ {
		var l workq.Log
		if l, err = w.q.PutLog(ctx, job.Build, job.ID, w.o.ID, name, file); err == nil || ctx.Err() != nil {
			return l, err
		}
		select {
		case <-ctx.Done():
			return workq.Log{}, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return workq.Log{}, err
}

// sandbox is the sandbox a job's checks run in: this machine's, with the
// host's limits and the stricter network of the host's and its own; nil
// when the worker runs checks unconfined (only for a host that does too).
func (w *Worker) sandbox(job workq.Job, m *mirror) (*sandbox.Sandbox, error) {
	if w.o.Unconfined {
		return nil, nil
	}
	c := w.o.Sandbox
	if job.Sandbox.Net == sandbox.NetNone || c.Net == "" {
		c.Net = sandbox.NetNone
	}
	if job.Sandbox.Required || job.Sandbox.Memory > 0 {
		// The disk bounds are this machine's (its disk, its caches).
		c.Limits = sandbox.Limits{Memory: job.Sandbox.Memory, Tasks: job.Sandbox.Tasks, FileSize: job.Sandbox.FileSize,
			Disk: c.Limits.Disk, Caches: c.Limits.Caches}
	}
	c.Limits = c.Limits.WithDefaults()
	gitDir := m.repo.GitDir()
	c.GitDir = gitDir
	c.Layers = filepath.Join(w.o.Work, "cache-layers") // each builder's copies of the RW paths
	c.Deny = append(slices.Clone(c.Deny), sandbox.Denied{Key: "worker.work's logs", Path: m.logs})
	key := fmt.Sprintf("%s|%d|%d|%d|%s", c.Net, c.Limits.Memory, c.Limits.Tasks, c.Limits.FileSize, gitDir)
	w.mu.Lock()
	box := w.boxes[key]
	w.mu.Unlock()
	if box != nil {
		return box, nil
	}
	box, err := sandbox.New(c)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.boxes[key] = box
	w.mu.Unlock()
	return box, nil
}

func short(oid string) string {
	if len(oid) > 12 {
		return oid[:12]
	}
	return oid
}
