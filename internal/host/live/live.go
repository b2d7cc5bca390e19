// Package live is foreman host's shell: it joins the room, feeds the core
// (package host) what the room says and what each job found, runs the jobs
// it asks for (package gitjob) in goroutines, keeps the ledger ahead of
// every line said, and writes the queue view for foreman status and the
// board.
package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/protocol"
)

// Jobs does the git work of a job.
type Jobs interface {
	Run(ctx context.Context, j host.Job) host.Outcome
}

// targeter reads where the target branch is (gitjob.Runner does).
type targeter interface {
	Target(ctx context.Context) (string, error)
}

// Recorder makes ledger records durable.
type Recorder interface {
	Append([]host.Record) error
}

// Options configure a running host.
type Options struct {
	Chat      agentchat.Config
	Core      host.Config
	State     host.State // from the ledger
	Jobs      Jobs
	Ledger    Recorder
	QueueFile string // the queue view, rewritten on every change; "" for none
	Logger    zerolog.Logger
	// StopGrace is how long a stopping host waits for its jobs to clean up
	// (default 30s).
	StopGrace time.Duration
}

// shell is one run of the host.
type shell struct {
	o         Options
	log       zerolog.Logger
	core      *host.Core
	client    *agentchat.Client
	results   chan host.Outcome
	jobs      map[int]context.CancelFunc
	wg        sync.WaitGroup
	jobCtx    context.Context
	seq       uint64
	stopped   bool   // no more lines are said
	lastQueue string // the queue view last written, without its time
	err       error
}

// Run is the host until ctx ends, the room refuses it for good, or its
// ledger fails (then nothing more can be promised, so it stops).
func Run(ctx context.Context, o Options) error {
	if o.StopGrace <= 0 {
		o.StopGrace = 30 * time.Second
	}
	jobCtx, stopJobs := context.WithCancel(context.WithoutCancel(ctx))
	defer stopJobs()
	s := &shell{
		o: o, log: o.Logger, core: host.New(o.Core, o.State), client: agentchat.New(o.Chat),
		results: make(chan host.Outcome, 16), jobs: map[int]context.CancelFunc{}, jobCtx: jobCtx,
	}
	s.apply(s.core.Pending())
	if s.err != nil {
		return s.err
	}
	if t, ok := o.Jobs.(targeter); ok {
		if at, err := t.Target(ctx); err == nil {
			s.apply(s.core.Target(time.Now(), at))
		}
	}
	roomCtx, stopRoom := context.WithCancel(ctx)
	defer stopRoom()
	runErr := make(chan error, 1)
	go func() { runErr <- s.client.Run(roomCtx) }()
	events := s.client.Events()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for s.err == nil {
		s.arm(timer)
		select {
		case ev, ok := <-events:
			if !ok {
				return s.stop(stopJobs, <-runErr)
			}
			s.event(ev)
		case out := <-s.results:
			s.finished(out)
		case <-timer.C:
			s.apply(s.core.Tick(time.Now()))
		case <-ctx.Done():
			stopRoom()
			return s.stop(stopJobs, <-runErr)
		}
	}
	stopRoom()
	<-runErr
	return s.stop(stopJobs, s.err)
}

func (s *shell) arm(t *time.Timer) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	if at, ok := s.core.NextWake(); ok {
		t.Reset(max(time.Until(at), 0))
	}
}

func (s *shell) event(ev agentchat.Event) {
	switch ev := ev.(type) {
	case agentchat.Joined:
		s.log.Info().Str("channel", ev.Channel).Bool("reconnect", ev.Reconnect).Msg("in the room; asking foreman for the board")
		s.apply(s.core.Joined(time.Now()))
	case agentchat.Message:
		if ev.Self || ev.Notice {
			return
		}
		for line := range protocol.Lines(ev.Body()) {
			s.apply(s.core.Heard(time.Now(), ev.From, ev.Verified, line))
			if s.err != nil {
				return
			}
		}
	case agentchat.ServerError:
		s.log.Warn().Str("code", ev.Code).Str("message", ev.Message).Msg("the room refused something")
	case agentchat.Disconnected:
		s.log.Warn().Err(ev.Err).Msg("disconnected from the room; reconnecting")
	}
}

func (s *shell) finished(o host.Outcome) {
	delete(s.jobs, o.Run)
	ev := s.log.Info().Int("run", o.Run).Str("result", o.Result.String())
	if o.Line != "" {
		ev = ev.Str("line", o.Line)
	}
	ev.Msg("job ended")
	s.apply(s.core.Finished(time.Now(), o))
}

// apply does what the core decided: records first (nothing is said that
// the ledger does not hold), then cancels, starts, and says.
func (s *shell) apply(a host.Actions) {
	if err := s.o.Ledger.Append(a.Records); err != nil {
		s.err = fmt.Errorf("ledger: %w (stopping: what the host says must be on disk first)", err)
		return
	}
	for _, run := range a.Cancel {
		if cancel := s.jobs[run]; cancel != nil {
			s.log.Info().Int("run", run).Msg("run is stale: cancelled")
			cancel()
		}
	}
	for _, j := range a.Start {
		if !s.stopped { // a stopping host starts nothing; the next start prunes what the ledger says began
			s.start(j)
		}
	}
	if len(a.Say) > 0 && !s.stopped {
		s.seq++
		group := s.seq
		lines := make([]agentchat.Line, len(a.Say))
		for i, l := range a.Say {
			s.seq++
			lines[i] = agentchat.Line{Seq: s.seq, Text: l, Group: group}
		}
		s.log.Info().Strs("said", a.Say).Msg("saying")
		s.client.Send(lines...)
	}
	s.writeQueue()
}

func (s *shell) start(j host.Job) {
	ctx, cancel := context.WithCancel(s.jobCtx)
	s.jobs[j.Run] = cancel
	s.log.Info().Int("run", j.Run).Str("kind", j.Kind.String()).Str("component", j.Component).Str("ref", j.Ref).
		Int("ahead", len(j.OnTrain)+len(j.Ahead)+len(j.Batch)).Bool("once", j.Once).Msg("job started")
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		o := s.o.Jobs.Run(ctx, j)
		o.Run = j.Run
		s.results <- o
	}()
}

// stop cancels the jobs, lets them clean up (their worktrees), and records
// how they ended; nothing more is said.
func (s *shell) stop(stopJobs context.CancelFunc, err error) error {
	s.stopped = true
	stopJobs()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	deadline := time.After(s.o.StopGrace)
	for len(s.jobs) > 0 {
		select {
		case o := <-s.results:
			s.finished(o)
		case <-done:
			for len(s.results) > 0 {
				s.finished(<-s.results)
			}
			s.jobs = nil
		case <-deadline:
			s.log.Warn().Int("jobs", len(s.jobs)).Msg("jobs did not stop in time; their worktrees are pruned on the next start")
			return errors.Join(err, s.err)
		}
	}
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return errors.Join(err, s.err)
}

// writeQueue writes the queue view where foreman status and the board read
// it, when it changed: whole, through a rename, so no reader sees half of
// it.
func (s *shell) writeQueue() {
	if s.o.QueueFile == "" {
		return
	}
	v := s.core.Queue()
	v.At = time.Time{}
	same, err := json.Marshal(v)
	if err != nil || string(same) == s.lastQueue {
		return
	}
	s.lastQueue = string(same)
	v.At = time.Now()
	data, err := json.MarshalIndent(v, "", "  ")
	if err == nil {
		tmp := s.o.QueueFile + ".tmp"
		if err = os.WriteFile(tmp, append(data, '\n'), 0o644); err == nil {
			err = os.Rename(tmp, s.o.QueueFile)
		}
	}
	if err != nil {
		s.log.Warn().Err(err).Str("path", s.o.QueueFile).Msg("cannot write the queue view")
	}
}

// QueueFile is where a host with this logs directory writes its queue.
func QueueFile(logs string) string { return filepath.Join(logs, "queue.json") }

// ReadQueue reads a queue view a host wrote.
func ReadQueue(path string) (host.QueueView, error) {
	var v host.QueueView
	data, err := os.ReadFile(path)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return v, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}
