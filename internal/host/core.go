package host

import (
	"maps"
	"slices"
	"time"

	"github.com/agentforeman/foreman/internal/host/receipt"
	"github.com/agentforeman/foreman/protocol"
)

// Actions are what the shell must do after an input, in this order: make
// Records durable, cancel, start, then say the lines.
type Actions struct {
	Records []Record
	Cancel  []int // runs to stop; their outcomes will be ignored
	Start   []Job
	Say     []string
}

func (a *Actions) empty() bool {
	return len(a.Records) == 0 && len(a.Cancel) == 0 && len(a.Start) == 0 && len(a.Say) == 0
}

// phase is where the host believes a component is, from the room.
type phase uint8

const (
	unknown  phase = iota
	pending        // nobody owns it
	building       // owned, being built (or blocked)
	inCI           // READY seen, waiting for CI
	review         // REVIEW said
	approved       // AUDIT PASS confirmed by STATUS (merge mode external)
	merged
	held
	reported // the host said its verdict; foreman's answer (REVIEW, FIX...) is on its way
)

var phaseNames = [...]string{"unknown", "pending", "building", "ci", "review", "approved", "merged", "held", "reported"}

func (p phase) String() string { return phaseNames[p] }

// comp is the host's view of one component.
type comp struct {
	name    string
	owner   string
	phase   phase
	ref     string // the last READY's or REVIEW's ref
	run     *run   // its one job, queued or running
	asked   bool   // a STATUS c is out to confirm an approval
	early   bool   // an AUDIT PASS came before the REVIEW it answers reached the host
	waiting *ready // a READY heard before the host knew c (replayed once a STATUS says)
	named   *ready // the last ref named (PROGRESS branch=, READY) before the host knew c's owner: its work in progress once a STATUS says whose
	gen     int    // the join whose STATUS answer last described it
	dupe    string // a READY from the owner heard while c was in CI already: foreman may have taken it after a FIX the host had not heard yet
	wip     wip    // its work in progress (wip.go)
	auditor string // who said the AUDIT PASS the host heard last

	saidMerged bool // the host said MERGED c: never twice
}

// ready is a READY line kept for later.
type ready struct{ from, ref string }

// run is one job, queued or running.
type run struct {
	Job
	queued    time.Time
	started   time.Time // zero while queued
	notBefore time.Time // a retry waits until then
	tries     int       // retries for the repository's sake so far
	flakes    int       // tries again of a flaky command's failure so far
	said      string    // the retry reason last said, so it is said once
	log       string
	// alone: a check not shared again, nor made on the train (queue.go):
	// a shared check it was in did not pass.
	alone bool
	// with: a shared check's other READYs, merged ahead of this one's.
	with []*run
}

// Core is the host's state machine. Not safe for concurrent use.
type Core struct {
	cfg      Config
	reader   protocol.Reader
	comps    map[string]*comp
	declared map[string]bool // cfg.Components
	order    []*run          // queued, oldest first
	running  map[int]*run
	passes   map[string]Pass
	lastRun  int
	now      time.Time

	gen       int       // joins so far: a STATUS line heard since the last one is fresh
	synced    bool      // every declared component has had a fresh STATUS line
	syncedAt  time.Time // when STATUS was last asked
	queueSaid time.Time // when the whole queue was last said in answer to STATUS
	recent    []Verdict // the last verdicts, for the queue view

	// The train (train.go).
	train       []*car
	cars        int       // cars made so far: their ids
	target      string    // the target's commit as the host last knew it; "" until a job says
	base        string    // the commit the train's chains are made on
	landed      []landing // cars landed since base, in order
	landing     *run      // the front car's landing, queued or running
	checkTime   time.Duration
	flaky       map[string]int         // checks that failed then passed, per command
	flakes      map[string]*flakeStats // per command, its failures and those passed again (flakes.go)
	failedTrees *recent[*failedTree]   // trees a command failed on, by tree

	// Work in progress (wip.go).
	scanning *run            // the scan running, if any
	pins     []*run          // pins to make or being made
	overlaps map[string]bool // the overlaps said: pair and files

	// What the records hold (landing.go): the trees that passed and how,
	// each component's approval, the approved commits landed, and the
	// receipts whose notes are not known written.
	trees     *recent[receipt.Checks] // by tree
	approvals map[string]Approval
	landedAt  *recent[string]     // approved commit -> the commit that landed it
	receipts  map[string]*Receipt // by landed commit
	notes     []*run              // receipts being written as notes
	lands     []LandedView        // what this host landed, for the board and foreman status
	checkRuns int                 // runs of the checks in this life (a READY's, a car's; a tree reused is none)
	landedN   int                 // components landed in this life

	// The chain of receipts (head.go): its newest landing, where it began,
	// and the signed head.
	chain    receipt.Link
	first    string    // the target before the ledger's first landing: the chain's start
	heading  *run      // the Head job writing the signed head, if any
	headWant bool      // the signed head is to be made again now (a landing, a start)
	headNext time.Time // when it is made again while nothing lands

	out Actions
}

// New makes a core; st is what the ledger held (zero for a first start).
func New(cfg Config, st State) *Core {
	cfg.defaults()
	h := &Core{
		cfg:         cfg,
		reader:      protocol.Reader{Mentions: cfg.Mentions},
		comps:       map[string]*comp{},
		declared:    map[string]bool{},
		running:     map[int]*run{},
		passes:      map[string]Pass{},
		lastRun:     st.LastRun,
		flaky:       map[string]int{},
		flakes:      map[string]*flakeStats{},
		failedTrees: newRecent[*failedTree](maxFailedTrees),
		overlaps:    map[string]bool{},
		trees:       newRecent[receipt.Checks](maxTrees),
		approvals:   maps.Clone(st.Approvals),
		landedAt:    newRecent[string](maxLanded),
		receipts:    map[string]*Receipt{},
		chain:       st.Chain,
		first:       st.First,
		headWant:    st.Chain.Seq > 0,
	}
	for _, c := range cfg.Components {
		h.declared[c] = true
	}
	maps.Copy(h.passes, st.Passes)
	if h.approvals == nil {
		h.approvals = map[string]Approval{}
	}
	for _, t := range st.Trees {
		h.trees.put(t.Tree, t)
	}
	for _, tip := range slices.Sorted(maps.Keys(st.Landed)) {
		h.landedAt.put(tip, st.Landed[tip])
	}
	// Jobs a crash cut short are over: their worktrees are gone (the shell
	// prunes them) and whether they are still wanted is the room's to say,
	// which it will once the host asks STATUS.
	for _, r := range st.InFlight {
		h.record(Record{Op: OpEnd, Run: r.Run, Component: r.Component, Result: "interrupted"})
	}
	// A landing cut short may have moved the target without its note, or
	// its record: each receipt not known written is settled first.
	for _, x := range st.Receipts {
		h.settle(x)
	}
	return h
}

// Pending hands over what New decided (ending the jobs a crash cut short).
func (h *Core) Pending() Actions { return h.take() }

func (h *Core) take() Actions {
	a := h.out
	h.out = Actions{}
	return a
}

func (h *Core) at(t time.Time) {
	if t.After(h.now) {
		h.now = t
	}
}

func (h *Core) say(line string) { h.out.Say = append(h.out.Say, line) }
func (h *Core) record(r Record) { h.out.Records = append(h.out.Records, r) }

func (h *Core) get(name string) *comp {
	c := h.comps[name]
	if c == nil {
		c = &comp{name: name}
		h.comps[name] = c
	}
	return c
}

// Joined is the host being in the room (first time or after a reconnect):
// it asks foreman for the whole board, which is where it learns what it
// missed.
func (h *Core) Joined(at time.Time) Actions {
	h.at(at)
	h.gen++
	h.synced = false
	h.askBoard()
	return h.take()
}

func (h *Core) askBoard() {
	h.syncedAt = h.now
	h.say("STATUS")
}

// Tick lets time pass: retries come due, an unanswered STATUS is asked
// again.
func (h *Core) Tick(at time.Time) Actions {
	h.at(at)
	if !h.synced && !h.syncedAt.IsZero() && !h.now.Before(h.syncedAt.Add(h.cfg.Resync)) {
		h.askBoard()
	}
	h.schedule()
	return h.take()
}

// NextWake is when Tick has something to do; false if nothing waits on
// time.
func (h *Core) NextWake() (time.Time, bool) {
	var next time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	if !h.synced && !h.syncedAt.IsZero() {
		consider(h.syncedAt.Add(h.cfg.Resync))
	}
	for _, r := range slices.Concat(h.order, h.pins, h.notes) {
		if r.started.IsZero() && r.notBefore.After(h.now) {
			consider(r.notBefore)
		}
	}
	if r := h.landing; r != nil && r.started.IsZero() && r.notBefore.After(h.now) {
		consider(r.notBefore)
	}
	for _, k := range h.train {
		if k.run == nil && k.notBefore.After(h.now) {
			consider(k.notBefore)
		}
	}
	consider(h.headDue())
	// Cars and READYs waiting for more to be checked with (host.batch.min).
	_, cars := h.batches()
	_, readys := h.checksDue()
	consider(cars)
	consider(readys)
	for _, c := range h.comps {
		if c.wip.due && c.inFlight() && !c.wip.scanned.IsZero() {
			if at := c.wip.scanned.Add(h.cfg.OverlapInterval); at.After(h.now) {
				consider(at)
			}
		}
	}
	return next, !next.IsZero()
}
