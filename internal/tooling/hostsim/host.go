package hostsim

import (
	"slices"
	"time"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/host/receipt"
	"github.com/agentforeman/foreman/protocol"
)

// simHost is foreman host's shell on the stage: the real core (package
// host), its ledger (durable as soon as appended, as the file's fdatasync
// makes it), the jobs done on the simulated repository, each taking a
// while. It can be killed (what it did not record is lost; a landing under
// way may have moved main, and written its note, or not) and stopped
// (SIGTERM: landings under way finish and are recorded, nothing more is
// said), and starts again from its ledger, as foreman host does.
type simHost struct {
	w      *world
	id     string
	key    *agentchat.Identity
	cfg    host.Config
	core   *host.Core
	ledger []host.Record

	up, stopping bool
	life         int // each start: a job of an earlier life is lost
	jobs         map[int]*job
	armed        time.Time
	pins         int
}

type job struct {
	j         host.Job
	life      int
	cancelled bool
}

func newHost(w *world, id *agentchat.Identity, coordinator string, comps []string) *simHost {
	cfg := host.Config{Self: id.AgentID(), Coordinator: coordinator, Components: comps, Mentions: []string{"@foreman", coordinator},
		Gating: true, External: true, MaxParallel: 1 + w.rnd.IntN(4), Target: "main", Backoff: 30 * time.Second,
		Repository: "shop", Checks: []string{"make test"}, Sign: func(s receipt.Signed) ([]byte, error) { return receipt.Sign(s, id) }}
	// host.batch.max: 1, each car checked, or one check vouching for up to
	// 2 to 4 cars, which land together (a batch);
	// host.failure_depth: a failure blamed at once, or once the car behind
	// it (whose chain holds it) said whether it passes.
	cfg.Batch = 1 + w.rnd.IntN(4)
	if depth := w.rnd.IntN(2); cfg.Batch > 1 {
		cfg.FailureDepth = depth // needs batches: a car behind lands a failed one with it
	}
	// host.retries: a failure counts at once, or once seen twice on its
	// tree (a run once, Job.Once, is checked again before blame).
	cfg.Retries = w.rnd.IntN(2)
	// host.batch.min and wait: fewer cars, or READYs, wait for more, up to
	// a few minutes (the host must wake when the wait is up, or the seed
	// never completes).
	cfg.BatchMin = 1 + w.rnd.IntN(cfg.Batch)
	cfg.BatchWait = time.Duration(1+w.rnd.IntN(5)) * time.Minute
	return &simHost{w: w, id: cfg.Self, key: id, cfg: cfg, jobs: map[int]*job{}}
}

// start is the host starting: from its ledger, on the repository as it is.
func (h *simHost) start() {
	var rp host.Replay
	for _, r := range h.ledger {
		rp.Apply(r)
	}
	h.core = host.New(h.cfg, rp.State())
	h.up, h.stopping, h.armed = true, false, time.Time{}
	h.w.trace("host starts (life %d) from %d records", h.life, len(h.ledger))
	h.apply(h.core.Pending())
	h.apply(h.core.Target(h.w.now(), h.w.repo.refs["main"]))
	h.apply(h.core.Joined(h.w.now()))
}

func (h *simHost) hear(m agentchat.Message) {
	if !h.up || h.stopping {
		return // a host that is down hears nothing; it asks STATUS when it is back
	}
	for line := range protocol.Lines(m.Content) {
		h.apply(h.core.Heard(h.w.now(), m.From, m.Verified, line))
	}
}

// apply does what the core decided: records first, then cancels, starts,
// and says (a stopping host says nothing).
func (h *simHost) apply(a host.Actions) {
	h.ledger = append(h.ledger, a.Records...)
	for _, run := range a.Cancel {
		if jb := h.jobs[run]; jb != nil {
			jb.cancelled = true
		}
	}
	for _, j := range a.Start {
		h.run(j)
	}
	if len(a.Say) > 0 && !h.stopping {
		h.w.stage.Say(h.id, a.Say...)
	}
	if at, ok := h.core.NextWake(); ok && !at.Equal(h.armed) {
		h.armed = at
		life := h.life
		h.w.stage.At(at, func() {
			if h.up && h.life == life {
				h.apply(h.core.Tick(h.w.now()))
			}
		})
	}
}

// run does a job on the repository: a check or a car looks at it now and
// answers when its checks are done; the others act when they end.
func (h *simHost) run(j host.Job) {
	jb := &job{j: j, life: h.life}
	h.jobs[j.Run] = jb
	var first host.Outcome
	var end func(host.Outcome) host.Outcome
	took := time.Duration(1+h.w.rnd.IntN(5)) * time.Second
	switch j.Kind {
	case host.Check:
		first, end = h.w.repo.check(j)
		took = time.Duration(20+h.w.rnd.IntN(160)) * time.Second
	case host.Car:
		first, end = h.w.repo.car(j)
		took = time.Duration(20+h.w.rnd.IntN(160)) * time.Second
	}
	h.w.stage.After(took, func() {
		if jb.life != h.life || !h.up {
			return // lost with the process it ran in
		}
		delete(h.jobs, j.Run)
		var o host.Outcome
		switch {
		case jb.cancelled:
			o = host.Outcome{Result: host.Cancelled}
		case j.Kind != host.Scan && h.w.rnd.Float64() < h.w.lockP:
			h.w.count("repository locked")
			o = host.Outcome{Result: host.Retry, Line: "the repository is locked by another git process"}
		case j.Kind == host.Check || j.Kind == host.Car:
			o = first
			if end != nil {
				o = end(o)
			}
			if o.Result == host.Failed {
				o.Tries = max(j.Tries, 1) // a broken version fails each try
			}
		case j.Kind == host.Land:
			h.w.repo.noteFails = h.w.rnd.Float64() < h.w.lockP
			if h.w.repo.noteFails {
				h.w.count("notes not written")
			}
			o = h.w.repo.land(j)
			h.w.repo.noteFails = false
		case j.Kind == host.Note:
			o = h.w.repo.noteJob(j)
		case j.Kind == host.Head:
			h.w.repo.head = j.Receipt
			o = host.Outcome{Result: host.Landed, Commit: j.Commit}
		case j.Kind == host.Pin:
			h.pins++
			o = host.Outcome{Result: host.Pinned, Commit: h.w.repo.refs[ref(j.Ref)], N: h.pins}
		default:
			o = host.Outcome{Result: host.Scanned}
		}
		o.Run = j.Run
		h.apply(h.core.Finished(h.w.now(), o))
		if h.stopping && !h.landing() {
			h.down()
		}
	})
}

// landing reports a landing under way.
func (h *simHost) landing() bool {
	for _, jb := range h.jobs {
		if jb.j.Kind == host.Land {
			return true
		}
	}
	return false
}

// kill is kill -9: a landing under way may have moved main (and written
// its note) before the process died, or not; nothing else of it happens.
func (h *simHost) kill() {
	if !h.up {
		return
	}
	h.w.count("host killed")
	for _, jb := range h.jobs {
		if jb.j.Kind == host.Land && h.w.rnd.IntN(2) == 0 {
			j := jb.j
			if h.w.rnd.IntN(2) == 0 {
				// Died between the compare-and-swap and the notes: the
				// first few of a batch's may be written, not the rest.
				j.Batch = slices.Clone(j.Batch)
				for i := h.w.rnd.IntN(len(j.Batch) + 1); i < len(j.Batch); i++ {
					j.Batch[i].Receipt = nil
				}
				j.Receipt = nil
			}
			h.w.trace("host killed after landing %s at %s", j.Component, short(j.Commit))
			h.w.repo.land(j)
		}
	}
	h.w.trace("host killed")
	h.down()
}

// stop is SIGTERM: the jobs stop but a landing under way, which finishes
// and is recorded; nothing more is said; then the host is down.
func (h *simHost) stop() {
	if !h.up || h.stopping {
		return
	}
	h.w.count("host stopped")
	h.w.trace("host stops (SIGTERM)")
	h.stopping = true
	for run, jb := range h.jobs {
		if jb.j.Kind != host.Land {
			delete(h.jobs, run)
			h.apply(h.core.Finished(h.w.now(), host.Outcome{Run: run, Result: host.Cancelled}))
		}
	}
	if !h.landing() {
		h.down()
	}
}

// down: the process is gone; it starts again after a while.
func (h *simHost) down() {
	h.up, h.stopping = false, false
	h.life++
	h.jobs = map[int]*job{}
	h.w.stage.After(time.Duration(5+h.w.rnd.IntN(300))*time.Second, h.start)
}

func short(oid string) string {
	if len(oid) > 12 {
		return oid[:12]
	}
	return oid
}
