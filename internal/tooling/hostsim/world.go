// Package hostsim is foreman host's fault simulator, after TigerBeetle's
// VOPR: the host's real core (package host) with its ledger, foreman's real
// engine (through internal/node, as the bot runs it), scripted builders
// and an auditor (package sim), all on a virtual clock in one goroutine,
// over a simulated git repository (repo.go) whose jobs behave as package
// gitjob's do (jobs.go), under faults a seed chooses: the host killed at
// any moment (a landing under way may have moved main, with or without its
// note) or stopped (SIGTERM), down for a while and missing what the room
// said meanwhile; the repository locked; commits pushed straight to main;
// builders pushing to their branch after their work was checked or
// approved; broken work; slow checks.
//
// After every step it checks the promise the host makes above all, on the
// simulated repository, as foreman verify does on a real one: every commit
// on main's first-parent line since the start was put there by the host's
// compare-and-swap (or pushed by hand, which the simulator did), merges a
// builder's commit the auditors approved (foreman accepted an AUDIT PASS
// for it after a REVIEW that followed the host's CI PASS of it), on a tree
// a run of the checks really passed (or, landed in a batch, whose head is
// above it on that line and has such a tree: main never points at a
// batch's other commits), and no approved commit or component landed
// twice; and the host says MERGED only for what is on main.
//
// Run one seed with Run, many with RunMany; `foreman sim --host` is the
// command.
package hostsim

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/host/receipt"
	"github.com/agentforeman/foreman/internal/node"
	"github.com/agentforeman/foreman/internal/tooling/sim"
)

// epoch is when every simulated world begins.
var epoch = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)

// limit is how long a world may run, in virtual time.
const limit = 48 * time.Hour

// Options configure one run.
type Options struct {
	Seed uint64
	// Trace, if set, is told what happens, for reading a failing seed.
	Trace func(at time.Duration, what string)

	// plant is a bug planted in what the host's jobs do, for the tests
	// that show the invariant catches it: "branch-now" lands what the
	// branch holds now instead of the approved commit (the car takes the
	// branch's tip and the landing does not look at the branch);
	// "batch-prefix" lands a batch's first commit alone, whose tree was
	// never checked, instead of moving main to its head.
	plant string
}

// Result is what one seed's run found.
type Result struct {
	Seed      uint64
	Virtual   time.Duration
	Steps     int
	Complete  bool
	Landed    int // commits the host's compare-and-swap put on main
	Batched   int // of those, the ones landed in a batch
	Faults    map[string]int
	Violation *Violation
}

// Violation is the promise broken, where.
type Violation struct {
	Seed   uint64
	Step   int
	At     time.Duration
	Detail string
}

func (v *Violation) Error() string {
	return fmt.Sprintf("seed %d, step %d (%s): only approved, tested trees land, each once: %s", v.Seed, v.Step, v.At, v.Detail)
}

// Replay is the command that runs this seed again, step by step.
func (v *Violation) Replay() string {
	return fmt.Sprintf("foreman sim --host --seeds 1 --from %d -v", v.Seed)
}

// world is one seed's run.
type world struct {
	seed  uint64
	opts  Options
	rnd   *rand.Rand
	stage *sim.Stage
	repo  *repo
	host  *simHost
	bot   *sim.Bot
	check *checker
	lockP float64 // how often a job finds the repository locked

	foreman, auditor string
	comps            []string
	steps            int
	complete         bool
	faults           map[string]int
	violation        *Violation
}

func (w *world) now() time.Time { return w.stage.Now() }
func (w *world) count(f string) { w.faults[f]++ }
func (w *world) trace(format string, args ...any) {
	if w.opts.Trace != nil {
		w.opts.Trace(w.now().Sub(epoch), fmt.Sprintf(format, args...))
	}
}

func (w *world) fail(format string, args ...any) {
	if w.violation == nil {
		w.violation = &Violation{Seed: w.seed, Step: w.steps, At: w.now().Sub(epoch), Detail: fmt.Sprintf(format, args...)}
	}
}

// identity is name's key in the world of seed: the ids repeat with the seed.
func identity(seed uint64, name string) *agentchat.Identity {
	h := sha256.New()
	_ = binary.Write(h, binary.BigEndian, seed)
	h.Write([]byte(name))
	var k [32]byte
	copy(k[:], h.Sum(nil))
	return agentchat.IdentityFromSeed(name, k)
}

var names = []string{"db", "auth", "api", "cart", "catalog", "search", "mailer", "web", "pay", "admin"}

// Run runs one seed.
func Run(o Options) Result {
	w := &world{seed: o.Seed, opts: o, rnd: rand.New(rand.NewPCG(o.Seed, 0x686f7374)), faults: map[string]int{}}
	if err := w.build(); err != nil {
		w.fail("the world could not be made: %v", err)
		return w.result()
	}
	w.run()
	return w.result()
}

// build makes the world: the repository, foreman, the host, the builders,
// the auditor, and the faults the seed chose.
func (w *world) build() error {
	w.stage = sim.NewStage(epoch, time.Second)
	w.repo = newRepo()
	w.repo.plant = w.opts.plant
	w.lockP = []float64{0, 0, 0.05, 0.15}[w.rnd.IntN(4)]
	n := 3 + w.rnd.IntN(8)
	var comps []coordinator.Component
	for i, c := range names[:n] {
		comp := coordinator.Component{Name: c}
		if i > 0 && w.rnd.IntN(3) == 0 {
			comp.Deps = []string{names[w.rnd.IntN(i)]}
		}
		comps = append(comps, comp)
		w.comps = append(w.comps, c)
	}
	fid, hid, aid := identity(w.seed, "foreman"), identity(w.seed, "host"), identity(w.seed, "aud")
	w.foreman, w.auditor = fid.AgentID(), aid.AgentID()
	rules := coordinator.DefaultRules()
	rules.CIGating, rules.Merge = true, coordinator.MergeExternal
	rules.CIAttempts, rules.ConflictAttempts, rules.MaxBuildTime = 50, 50, 0
	cfg := coordinator.Config{Build: "shop", Self: w.foreman, Mentions: []string{"@foreman", w.foreman}, Components: comps,
		Roles: coordinator.Roles{CI: []string{hid.AgentID()}, Merger: []string{hid.AgentID()}, Auditors: []string{w.auditor}},
		Rules: rules}
	nd, err := node.Open(node.Config{Engine: cfg, SnapshotEvery: -1})
	if err != nil {
		return err
	}
	w.check = newChecker(w)
	w.stage.Listen("watcher", "watcher", w.check.heard)
	w.host = newHost(w, hid, w.foreman, w.comps)
	w.stage.Listen(w.host.id, "host", w.host.hear)
	broken := []float64{0, 0.2, 0.5}[w.rnd.IntN(3)]
	for i := range 2 + w.rnd.IntN(3) {
		name := fmt.Sprintf("b%d", i+1)
		s := sim.DefaultBuilder()
		pushes := map[string]int{}
		s.Push = func(c, branch string, fixes int) error {
			pushes[c]++
			version := fmt.Sprintf("%s by %s, push %d", c, name, pushes[c])
			if pushes[c] == 1 && w.rnd.Float64() < broken {
				w.repo.broken[version] = true
			}
			w.repo.push(branch, c, version)
			return nil
		}
		p, err := sim.NewBuilder(sim.Config{Name: name, Identity: identity(w.seed, name), Coordinator: w.foreman,
			Minute: time.Minute, RateLimit: time.Second, Seed: w.seed + uint64(i)}, s)
		if err != nil {
			return err
		}
		w.stage.Add(p)
	}
	aud, err := sim.NewAuditor(sim.Config{Name: "aud", Identity: aid, Coordinator: w.foreman, Minute: time.Minute,
		RateLimit: time.Second, Seed: w.seed + 99}, sim.Auditor{Delay: time.Duration(30+w.rnd.IntN(150)) * time.Second})
	if err != nil {
		return err
	}
	w.stage.Add(aud)
	w.host.start()
	w.bot = sim.NewBot(w.stage, w.foreman, "foreman", nd)
	nd.Step(coordinator.Event{Kind: coordinator.KindStart, At: w.now(), Instance: "hostsim"})
	w.bot.Flush()
	w.faultsLater()
	return nil
}

// faultsLater schedules what goes wrong, while the build runs (a build
// here takes half an hour to two).
func (w *world) faultsLater() {
	window := time.Duration(20+w.rnd.IntN(60)) * time.Minute
	at := func() time.Duration { return time.Duration(w.rnd.Int64N(int64(window))) }
	for range w.rnd.IntN(6) {
		w.stage.After(at(), w.host.kill)
	}
	for range w.rnd.IntN(4) {
		w.stage.After(at(), w.host.stop)
	}
	for range w.rnd.IntN(3) {
		w.stage.After(at(), func() {
			w.count("pushed straight to main")
			id := w.repo.push("main", "NOTES", fmt.Sprintf("a fix by hand at %s", w.now().Sub(epoch)))
			w.repo.byHand[id] = true
			w.trace("a commit pushed straight to main: %s", short(id))
		})
	}
	for range w.rnd.IntN(7) {
		w.stage.After(at(), w.pushAfterReview)
	}
}

// pushAfterReview is a builder pushing to its branch while its work is in
// review, or approved: what it pushed was never checked nor reviewed.
func (w *world) pushAfterReview() {
	for _, c := range w.comps {
		ref := w.check.reviewRef[c]
		if ref == "" || w.check.merged[c] {
			continue
		}
		w.count("pushed after review")
		id := w.repo.push(ref, c, fmt.Sprintf("%s, pushed after its review at %s", c, w.now().Sub(epoch)))
		w.trace("%s pushed to %s after its review: %s", c, ref, short(id))
		return
	}
}

func (w *world) run() {
	end := epoch.Add(limit)
	for w.violation == nil && !w.complete {
		at, ok := w.stage.Next()
		if !ok || at.After(end) {
			break
		}
		w.stage.Step()
		w.steps++
		w.check.step()
	}
	if w.violation != nil {
		return
	}
	w.check.step()
	// Settled: once the host has written every note a kill cut off, and
	// signed its head, the notes alone must hold, anchored.
	for w.violation == nil && w.complete && !w.settled() {
		at, ok := w.stage.Next()
		if !ok || at.After(end.Add(settleLimit)) {
			break
		}
		w.stage.Step()
		w.steps++
		w.check.step()
	}
	if w.violation == nil && w.complete {
		w.check.final()
	}
}

// settleLimit is how long a complete build may take to have every note
// written and its head signed.
const settleLimit = 3 * time.Hour

// settled reports whether every landing on main has its note, and the
// host's signed head names the newest.
func (w *world) settled() bool {
	r := w.repo
	newest := ""
	for id := r.refs["main"]; id != ""; {
		if _, ok := r.landed[id]; ok {
			if newest == "" {
				newest = id
			}
			if r.notes[id] == nil {
				return false
			}
		}
		cm := r.commits[id]
		if len(cm.parents) == 0 {
			break
		}
		id = cm.parents[0]
	}
	if newest == "" {
		return true
	}
	key, err := receipt.KeyOf(w.host.key.PublicPEM())
	if err != nil {
		return false
	}
	h, _, err := receipt.OpenHead(r.head, []receipt.Key{key})
	return err == nil && h.Newest.Commit == newest
}

func (w *world) result() Result {
	return Result{Seed: w.seed, Virtual: w.now().Sub(epoch), Steps: w.steps, Complete: w.complete,
		Landed: len(w.repo.landed), Batched: w.repo.batched(), Faults: w.faults, Violation: w.violation}
}

// Summary is what many seeds found.
type Summary struct {
	Seeds, Complete, Landed int
	Batched                 int // landed in a batch
	Steps                   int
	Faults                  map[string]int
	Violations              []*Violation
}

// RunMany runs seeds from to from+n-1, each as Run does; each is told to
// done, if set, as it ends.
func RunMany(from uint64, n int, done func(Result)) Summary {
	s := Summary{Faults: map[string]int{}}
	for seed := from; seed < from+uint64(n); seed++ {
		r := Run(Options{Seed: seed})
		s.Seeds++
		s.Steps += r.Steps
		s.Landed += r.Landed
		s.Batched += r.Batched
		if r.Complete {
			s.Complete++
		}
		for f, k := range r.Faults {
			s.Faults[f] += k
		}
		if r.Violation != nil {
			s.Violations = append(s.Violations, r.Violation)
		}
		if done != nil {
			done(r)
		}
	}
	return s
}
