package vopr

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/tooling/sim"
)

// epoch is when every simulated build's world begins.
var epoch = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)

// Options configure one run.
type Options struct {
	Seed uint64
	// Trace, if set, is told every step's time and what happened, for
	// reading a failing seed.
	Trace func(step int, at time.Duration, what string)
	// Takeovers makes every stall a cluster's takeover (internal/cluster):
	// foreman stops past its lease, a standby opens the same log behind a
	// fence and leads, and the stopped one wakes deposed. Off, the seeds
	// tell the stories they always told.
	Takeovers bool

	// plant is a bug planted in the simulated host, for the tests that
	// show the invariants catch it: "pin-late" pins what the branch holds
	// when the next ACK comes instead of when the builder left;
	// "overlap-merged" says OVERLAP for components it heard merged.
	plant string
}

// Result is what one seed's run found.
type Result struct {
	Seed      uint64
	Steps     int // things that happened, each followed by the checks
	Faults    Faults
	Violation *Violation
	// Limit is set when the run reached a limit foreman documents (it
	// cannot know what a deleted journal held once the room's history no
	// longer shows it): the run stops there, not a violation.
	Limit    string
	Complete bool
	Virtual  time.Duration // virtual time simulated
	Room     []string      // the room as transcript lines (only with a violation)
	History  []string      // the journal's history as a transcript (only with a violation)
}

// Violation is a broken promise: which, where, and the command that
// replays it.
type Violation struct {
	Seed      uint64
	Step      int
	At        time.Duration // virtual time since the world began
	Invariant string
	Detail    string
	Takeovers bool // the run's stalls were takeovers (Options.Takeovers)
}

func (v *Violation) Error() string {
	return fmt.Sprintf("seed %d, step %d (%s): %s: %s", v.Seed, v.Step, v.At, v.Invariant, v.Detail)
}

// Replay is the command that runs this seed again.
func (v *Violation) Replay() string {
	if v.Takeovers {
		return fmt.Sprintf("foreman sim --takeovers --seeds 1 --from %d -v", v.Seed)
	}
	return fmt.Sprintf("foreman sim --seeds 1 --from %d -v", v.Seed)
}

// world is one seed's run: the stage's clock, the room, foreman, the
// agents, the faults and the checks.
type world struct {
	seed     uint64
	opts     Options
	rnd      *rand.Rand
	stage    *sim.Stage
	plan     *plan
	engCfg   coordinator.Config
	startCfg coordinator.Config // as the build started (reloads change engCfg)

	room          *room
	foremanID     string
	tag           string
	disk          *disk
	backup        *disk  // the journal before it was damaged, for the operator to restore
	broken        string // the journal's damage, until restored
	fm            *proc
	twin          *proc
	life          int
	restartAt     bool // a restart is scheduled
	restoring     bool // the operator is restoring the journal
	twins         int  // second foremen started
	reloads       int
	pendingDamage fault // what to do to the journal before the next restart; -1: nothing

	agents    []*agent
	builders  []*builder
	bagents   []*agent
	op        *operator
	opAgent   *agent
	audAgent  *agent
	mal       *agent
	hostAgent *agent // the CI role: foreman host's part in work in progress (host.go)
	repo      *repo
	overlaps  map[[2]string]string // pairs of components whose work collides, with the files

	check     *checker
	steps     int
	calm      bool
	draining  bool
	done      bool
	violation *Violation
	limit     string
	faults    Faults
}

func (w *world) now() time.Time                  { return w.stage.Now() }
func (w *world) at(t time.Time, f func())        { w.stage.At(t, f) }
func (w *world) after(d time.Duration, f func()) { w.stage.After(d, f) }
func (w *world) since(t time.Time) string {
	return (t.Sub(epoch)).Round(time.Millisecond).String()
}
func (w *world) count(f fault) { w.faults[f]++ }
func (w *world) failed() bool  { return w.violation != nil }

func (w *world) fail(inv, detail string) {
	if w.violation != nil || w.limit != "" {
		return
	}
	w.violation = &Violation{Seed: w.seed, Step: w.steps, At: w.now().Sub(epoch), Invariant: inv, Detail: detail, Takeovers: w.opts.Takeovers}
}

func (w *world) limitReached(why string) {
	if w.limit == "" {
		w.limit = why
	}
}

func (w *world) trace(format string, args ...any) {
	if w.opts.Trace != nil {
		w.opts.Trace(w.steps, w.now().Sub(epoch), fmt.Sprintf(format, args...))
	}
}

func hash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// agentID is a sender id as the room derives it from a key: @ and 16 hex
// digits, here from the seed and the name.
func agentID(seed uint64, name string) string {
	return fmt.Sprintf("@%016x", hash(fmt.Sprintf("%d/%s", seed, name)))
}

func (w *world) instance(life int) string {
	return fmt.Sprintf("%06x", hash(fmt.Sprintf("%d#%d", w.seed, life))&0xffffff)
}

// someBuilder is a builder's id, at random.
func (w *world) someBuilder(r *rand.Rand) string {
	if len(w.bagents) == 0 {
		return ""
	}
	return w.bagents[r.IntN(len(w.bagents))].id
}

// Run runs one seed.
func Run(opts Options) Result {
	w := newWorld(opts)
	w.run()
	return w.result()
}

func newWorld(opts Options) *world {
	w := &world{seed: opts.Seed, opts: opts, rnd: rand.New(rand.NewPCG(opts.Seed, 0x766f7072))}
	w.stage = sim.NewStage(epoch, 0)
	w.foremanID = agentID(w.seed, "foreman")
	w.plan = newPlan(w)
	w.engCfg = w.plan.build()
	w.room = &room{w: w, rate: w.plan.rate, size: w.plan.history}
	w.disk = &disk{}
	w.pendingDamage = -1

	nb := w.engCfg.Rules.MaxBuilders + w.rnd.IntN(3) // fewer, and a component every builder is barred from waits for nobody
	for i := range nb {
		b := newBuilder(w, w.rnd)
		a := w.newAgent(fmt.Sprintf("b%d", i+1), b)
		w.builders = append(w.builders, b)
		w.bagents = append(w.bagents, a)
	}
	w.audAgent = w.newAgent("auditor", newAuditor(time.Duration(30+w.rnd.IntN(150))*time.Second, w.rnd.Float64()*0.4))
	w.repo = newRepo(w)
	w.hostAgent = w.newAgent("host", newHost())
	w.overlaps = pickOverlaps(w.rnd, w.engCfg.Components)
	w.op = newOperator(time.Duration(1+w.rnd.IntN(10)) * time.Minute)
	w.opAgent = w.newAgent("operator", w.op)
	if w.plan.on(faultFlood) || w.plan.on(faultHostile) || w.rnd.IntN(3) == 0 {
		w.mal = w.newAgent("mallory", &mallory{})
		w.mal.careless = true
	}
	w.engCfg.Roles.Operators = []string{w.opAgent.id}
	w.engCfg.Roles.CI = []string{w.hostAgent.id}
	if w.rnd.IntN(2) == 0 {
		w.engCfg.Roles.Auditors = []string{w.audAgent.id}
	}
	w.engCfg.Mentions = []string{"@foreman", w.foremanID}
	w.engCfg.Self = w.foremanID
	w.startCfg = w.engCfg
	w.check = newChecker(w)
	return w
}

func (w *world) run() {
	w.startForeman()
	for i, a := range w.agents {
		a := a
		w.after(time.Duration(200+50*i)*time.Millisecond, a.connect)
	}
	w.after(w.plan.faultEnd, w.becomeCalm)
	w.plan.schedule()
	horizon := epoch.Add(w.plan.faultEnd + 24*time.Hour)
	for !w.done && w.violation == nil && w.limit == "" {
		next, ok := w.stage.Next()
		if !ok {
			break
		}
		if next.After(horizon) && !w.draining {
			w.drain()
			continue
		}
		w.stage.Step()
		w.steps++
		if w.violation == nil && !w.draining && w.check.complete && w.fm != nil && !w.fm.dead && w.calm &&
			w.fm.sess.InRoom() && w.fm.sess.Node().Engine().View().Complete {
			w.drain()
		}
	}
	if !w.done && w.violation == nil && w.limit == "" {
		w.fail(invEnd, "the world stopped before the build ended")
	}
}

// becomeCalm ends the faults: from now on agents behave, foreman runs.
func (w *world) becomeCalm() {
	w.calm = true
	w.op.calm = true
	for _, b := range w.builders {
		b.silentUntil = time.Time{}
	}
	if w.fm != nil && w.fm.stalled {
		w.fm.resume()
	}
	w.trace("faults over")
}

// drain stops the agents and lets foreman finish what is in flight, then
// runs the final checks.
func (w *world) drain() {
	w.draining = true
	for _, a := range w.agents {
		a.stopped = true
	}
	w.trace("draining")
	var finish func(tries int)
	finish = func(tries int) {
		if w.violation != nil || w.limit != "" {
			return
		}
		p := w.fm
		if p == nil || p.dead || !p.sess.InRoom() || p.cl.inflight != nil || p.cl.out.Len() > 0 {
			if tries > 120 {
				w.fail(invEnd, "foreman was not back in the room, with everything sent, an hour after the end")
				w.done = true
				return
			}
			w.after(30*time.Second, func() { finish(tries + 1) })
			return
		}
		w.check.finish(p)
		w.done = true
	}
	w.after(time.Minute, func() { finish(0) })
}

// startForeman starts a foreman process on the journal.
// leaseTTL and renewEvery are a cluster's default lease (internal/cluster).
const (
	leaseTTL   = 3 * time.Second
	renewEvery = leaseTTL / 4
)

// takeover is a cluster's failover while foreman is stopped: its lease
// lapses, a standby fences the log (the journal, shared) and leads it as a
// restart would, and the stopped process wakes later, deposed. Its gate is
// shut (it may say nothing), its first commit finds the fence, and within a
// renewal it learns that the lease is gone and stops; it never signs in
// again (a stock room would hold its sign-in longer than that).
func (w *world) takeover(fm *proc) {
	stalledAt := w.now()
	w.trace("inject: foreman stalls past its lease; a standby will take over")
	fm.stall()
	w.after(leaseTTL, func() {
		if fm.dead || w.fm != fm || w.restartAt {
			return
		}
		w.count(faultTakeover)
		fm.deposed = true
		w.check.lifeEnded()
		w.check.gone(w.room.now())
		// The alive mark rides on the lease's renewals, which stopped with
		// the process: what it noted since its last renewal is lost.
		w.disk.crash(stalledAt, renewEvery)
		w.disk.fence = w.life + 1
		w.trace("the standby fences the log and takes the build over")
		w.startForeman()
	})
	w.after(leaseTTL+time.Duration(1+w.rnd.IntN(20))*time.Second, func() {
		if !fm.deposed {
			fm.resume()
			return
		}
		w.trace("the deposed foreman (life %d) wakes", fm.life)
		fm.resume()
		w.after(renewEvery, func() { fm.exit(errLeaseLost) })
	})
}

var errLeaseLost = errors.New("could not renew the lease in time: another foreman leads")

func (w *world) startForeman() {
	w.restartAt = false
	w.life++
	if w.life > 1 {
		w.count(faultRestart)
	}
	p := &proc{w: w, life: w.life, id: w.foremanID, d: w.disk}
	w.fm = p
	w.trace("foreman starts (life %d)", w.life)
	if err := p.start(); err != nil {
		p.dead = true
		w.ended(p, err)
	}
}

// ended is a foreman process gone: killed (err nil) or stopped. Whether
// stopping was right is judged here; then it is started again.
func (w *world) ended(p *proc, err error) {
	if p.deposed {
		w.trace("the deposed foreman (life %d) stopped: %v", p.life, err)
		return
	}
	if p.twin {
		w.trace("the second foreman stopped: %v", err)
		if w.twin == p {
			w.twin = nil
		}
		return
	}
	w.check.lifeEnded()
	w.check.gone(w.room.now())
	w.trace("foreman stopped: %v", err)
	var re *refusal
	var de *damagedError
	switch {
	case err == nil:
	case errors.As(err, &de):
		if w.broken == "" {
			w.fail(invRefusal, "foreman would not start on a journal nobody damaged: "+err.Error())
			return
		}
	case errors.As(err, &re):
		if w.broken != "deleted" {
			w.fail(invRefusal, "foreman refused to coordinate with nothing to refuse: "+re.err.Why)
			return
		}
	case errors.Is(err, errDisplaced):
		if w.twins == 0 {
			w.fail(invRefusal, "foreman was displaced with no second foreman in the room")
			return
		}
	case errors.Is(err, errDiskFull):
	default:
		w.fail(invRefusal, "foreman stopped: "+err.Error())
		return
	}
	if w.broken == "" {
		w.scheduleRestart(w.plan.downtime())
		return
	}
	w.trace("the journal is %s: foreman stays down until the operator restores it", w.broken)
	w.restoreLater()
}

func (w *world) scheduleRestart(d time.Duration) {
	if w.restartAt {
		w.trace("a restart is already on its way")
		return
	}
	w.restartAt = true
	w.after(d, func() {
		if w.violation != nil || w.limit != "" {
			return
		}
		if !w.calm {
			w.plan.damage()
		}
		w.startForeman()
	})
}

// restoreLater: the operator reads foreman's refusal, restores the journal
// from its copy, and starts foreman again.
func (w *world) restoreLater() {
	if w.restoring {
		return
	}
	w.restoring = true
	w.after(w.plan.downtime()+time.Minute, func() {
		w.restoring = false
		if w.backup != nil {
			w.disk = w.backup
			w.backup = nil
		}
		w.broken = ""
		w.trace("the operator restored the journal")
		w.scheduleRestart(time.Second)
	})
}

// killPoint is a point in foreman's loop where it may be killed: false if
// it was.
func (w *world) killPoint(p *proc, where string) bool {
	if p.twin || p.deposed || w.calm || !w.plan.on(faultKill) || w.rnd.Float64() >= w.plan.killP {
		return true
	}
	switch where {
	case "before-commit", "handled":
		w.count(faultKillCommit)
	case "after-commit":
		w.count(faultKillSend)
	}
	w.trace("foreman killed (%s)", where)
	p.kill()
	return false
}

func (w *world) result() Result {
	r := Result{Seed: w.seed, Steps: w.steps, Faults: w.faults, Violation: w.violation, Limit: w.limit,
		Complete: w.check.complete, Virtual: w.now().Sub(epoch)}
	return r
}

// pickOverlaps chooses which components' work collides, and in which
// files: the host finds these pairs when their branches are in flight.
func pickOverlaps(r *rand.Rand, comps []coordinator.Component) map[[2]string]string {
	out := map[[2]string]string{}
	for i := range comps {
		for j := i + 1; j < len(comps); j++ {
			if r.IntN(4) == 0 {
				files := "shared/" + comps[i].Name + "_" + comps[j].Name + ".go"
				if r.IntN(3) == 0 {
					files += " go.mod"
				}
				out[[2]string{comps[i].Name, comps[j].Name}] = files
			}
		}
	}
	return out
}

// overlapFiles is what c's and d's work collide in; "" if nothing.
func (w *world) overlapFiles(c, d string) string {
	if f, ok := w.overlaps[[2]string{c, d}]; ok {
		return f
	}
	return w.overlaps[[2]string{d, c}]
}

// components is the build's parts, from which names are drawn.
var componentNames = []string{"db", "auth", "api", "cart", "catalog", "search", "mailer", "web", "pay", "admin"}

func pickComponents(r *rand.Rand) []coordinator.Component {
	n := 3 + r.IntN(5)
	names := slices.Clone(componentNames)
	r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	names = names[:n]
	comps := make([]coordinator.Component, n)
	for i, name := range names {
		comps[i].Name = name
		for j := range i {
			if r.IntN(10) < 3 {
				comps[i].Deps = append(comps[i].Deps, names[j])
			}
		}
	}
	return comps
}
