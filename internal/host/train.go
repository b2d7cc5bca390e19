package host

import (
	"slices"
	"time"
)

// The train lands approved components (merge mode external) as fast as
// their checks allow, after Zuul's dependent pipelines: every approved
// component is a car, in the order it was approved, and each car is
// checked where it will land, on the target merged with every car ahead
// of it, all at once, up to max_parallel:
//
//	target T ──┬── car A: checks T+A          lands T -> T+A      when A passed
//	           ├── car B: checks T+A+B        lands T+A -> T+A+B  when A and B passed
//	           └── car C: checks T+A+B+C      ...
//
// The cars ahead are a guess: they may still fail. So a car's result
// counts only while its chain is current (made on the train's base with
// exactly the cars landed since and the cars ahead of it now), and a
// failure is blamed on a car only once every car ahead of it has passed:
// then it is that car's own (two components that pass alone and fail
// together step back the later one). The failed car leaves (CI c FAIL or
// CONFLICT, contract section 7), the cars ahead of it are untouched, and
// the cars behind it are checked again without it. A chain that comes out
// as a tree that already passed is not checked again (the shell keeps the
// trees that passed), so a result is reused whatever chain found it. Every
// merge the host makes is deterministic, so the commit a car was checked
// as is the commit that lands, whichever job made it.

// car is one approved component in the train.
type car struct {
	id      int
	c       *comp
	tip     string    // the approved commit; "" until a job found it (no check before review)
	run     *run      // its check, queued or running
	boarded time.Time // when it joined the train

	// A check the repository could not do now is tried again later.
	notBefore time.Time
	tries     int
	said      string

	// afterLanding: its last job found the target moved while a landing
	// was under way; it is checked again once that landing is done.
	afterLanding bool
	// flakes: its chain's check failed on a flaky command this many
	// times, and was tried again (flakes.go).
	flakes int
	// seen is how many times its chain's check failed, counting each try
	// (host.retries): a failure is its own only once seen 1+host.retries
	// times on the same chain.
	seen int

	// Its result, and the chain it is for.
	done  *Outcome
	based string // the base the chain was made on
	chain []int  // the ids of the cars merged before it: landed since based, then ahead
}

// Target tells the core where the target is now (the shell reads it at
// start): the train's chains are made on it, and a check before review
// made on it is landed as it is. Without it the first car's job finds
// the target. A target moved by hand later is found by the next landing.
func (h *Core) Target(at time.Time, commit string) Actions {
	h.at(at)
	if commit != "" && commit != h.target && h.landing == nil {
		h.target, h.base, h.landed = commit, commit, nil
	}
	h.schedule()
	return h.take()
}

func (h *Core) carOf(c *comp) *car {
	for _, k := range h.train {
		if k.c == c {
			return k
		}
	}
	return nil
}

// alight takes c's car off the train (c left approval); the cars behind
// it are no longer current and will be checked again without it.
func (h *Core) alight(c *comp) {
	for i, k := range h.train {
		if k.c == c {
			h.train = slices.Delete(h.train, i, i+1)
			h.emptied()
			return
		}
	}
}

// emptied starts the next train from the target as it is, once nothing
// is left of the last one.
func (h *Core) emptied() {
	if len(h.train) == 0 && h.landing == nil {
		h.base, h.landed = h.target, nil
	}
}

// chainOf is the chain car i is checked on now: the ids, and the links
// the shell merges.
func (h *Core) chainOf(i int) ([]int, []Link) {
	var ids []int
	var links []Link
	for _, l := range h.landed {
		ids = append(ids, l.id)
		links = append(links, l.link)
	}
	for _, k := range h.train[:i] {
		ids = append(ids, k.id)
		links = append(links, h.linkOf(k))
	}
	return ids, links
}

// linkOf is car k as merged in a chain: with who approved it, whose names
// its commit's message carries.
func (h *Core) linkOf(k *car) Link {
	return Link{Component: k.c.name, Tip: k.tip, Ref: k.c.ref, Owner: k.c.owner, Auditors: h.approvals[k.c.name].Auditors}
}

// current reports whether what car i has (a result, or a run) is for the
// chain it would be checked on now.
func (h *Core) current(i int, k *car) bool {
	ids, _ := h.chainOf(i)
	return k.based == h.base && slices.Equal(k.chain, ids)
}

// reconcile brings the train up to date after anything happened: results
// and runs of chains that are no longer current are dropped, failures are
// blamed where they can be, and the cars that passed land.
func (h *Core) reconcile() {
	for {
		for i, k := range h.train {
			if h.inLanding(k) {
				continue // its landing is under way: what it landed, it says
			}
			if (k.done != nil || k.run != nil || k.seen > 0) && !h.current(i, k) {
				if k.run != nil {
					h.cancel(k.run)
					k.run = nil
				}
				k.done, k.seen = nil, 0
			}
		}
		if !h.blameOne() {
			break
		}
	}
	h.land()
}

// inLanding reports whether k is landed by the landing under way.
func (h *Core) inLanding(k *car) bool {
	if h.landing == nil {
		return false
	}
	for _, l := range h.landing.Landings() {
		if l.Component == k.c.name {
			return true
		}
	}
	return false
}

// unvouched reports whether nothing says or will say whether k's chain
// passes: no pass, no run, no landing.
func (h *Core) unvouched(k *car) bool { return !passed(k) && k.run == nil && !h.inLanding(k) }

// passed reports whether k has a result of its chain that passed.
func passed(k *car) bool { return k.done != nil && k.done.Result == Passed }

// coverOf is the furthest car, at or behind car i, whose chain passed and
// says what it was made of: that chain holds car i, so car i's work is in
// a tree that passed, and lands with it (a batch). -1 if none. With
// batching off (host.batch.max 1) only car i's own chain covers it: every
// commit the target holds has its own tree passed, and a car behind that
// passed first waits for the cars ahead.
func (h *Core) coverOf(i int) int {
	if h.cfg.Batch == 1 {
		if passed(h.train[i]) && !h.landedBefore(h.train[i]) {
			return i
		}
		return -1
	}
	for j := len(h.train) - 1; j >= i; j-- {
		if k := h.train[j]; passed(k) && len(k.done.Chain) == len(k.chain)+1 && !slices.ContainsFunc(h.train[i:j+1], h.landedBefore) {
			return j
		}
	}
	return -1
}

// landedBefore reports whether k's approved commit is on record as landed
// (a landing a stop or a crash cut short before MERGED): no batch holds
// it; its own car's job finds it on the target, and says so.
func (h *Core) landedBefore(k *car) bool {
	_, ok := h.landedAt.get(k.tip)
	return k.tip != "" && ok
}

// blameOne steps back the first car whose failure is its own, if any: one
// whose chain failed on top of a chain that passed (the car just ahead of
// it passed, or it is the first), and that no chain behind it passed (then
// the failure was not its to carry: a flake, or an interaction a car
// behind resolves); or whose own commit is bad (gone, moved after
// approval) whatever the chain. A failure seen fewer than 1+host.retries
// times on its chain (its run was a bisection's, run once) is checked
// again first, as a retry would have.
func (h *Core) blameOne() bool {
	for i, k := range h.train {
		o := k.done
		switch {
		case o == nil || o.Result == Passed:
			continue
		case o.Result == Invalid, o.Result == Stale:
		case o.Result == Conflicted && o.Culprit != "":
			continue // a car ahead does not merge; its own check says so
		case i > 0 && !passed(h.train[i-1]), h.coverOf(i) >= 0, h.waits(i):
			continue
		case o.Result == Failed && !o.Lasting && k.seen < 1+h.cfg.Retries:
			k.done = nil // checked again: its next run is the retry
			continue
		}
		h.train = slices.Delete(h.train, i, i+1)
		h.emptied()
		r := &run{Job: Job{Run: o.Run, Kind: Car, Component: k.c.name, Ref: k.c.ref, Owner: k.c.owner}}
		h.report(k.c, r, *o) // its run's end is recorded already
		return true
	}
	return false
}

// checkedBy is the car behind i (or i) whose chain's run, under way,
// will say for car i too; -1 if none.
func (h *Core) checkedBy(i int) int {
	for j := i; j < len(h.train); j++ {
		if k := h.train[j]; k.run != nil {
			return j
		} else if k.done != nil {
			return -1
		}
	}
	return -1
}

// failedBehind is the first car behind i whose chain failed with no pass
// between: car i's check bisects its batch; -1 if none.
func (h *Core) failedBehind(i int) int {
	for j := i + 1; j < len(h.train); j++ {
		switch k := h.train[j]; {
		case passed(k):
			return -1
		case k.done != nil:
			return j
		}
	}
	return -1
}

// waits reports whether car i's failure waits for the cars behind it
// (host.failure_depth): one of them has yet to say whether its chain,
// which holds car i, passes.
func (h *Core) waits(i int) bool {
	for _, k := range h.train[i+1 : min(i+1+h.cfg.FailureDepth, len(h.train))] {
		if k.done == nil && k.c.phase != held {
			return true
		}
	}
	return false
}

// passOf is what passed the check of c's current READY, if the host knows.
func (h *Core) passOf(c *comp) (Pass, bool) {
	p, ok := h.passes[c.name]
	return p, ok && p.Ref == c.ref && p.Owner == c.owner
}

// toCheck is the cars whose chains are worth checking now, in the order to
// check them. A check of car i's chain vouches for every car up to i, so
// the train is cut into batches of at most host.batch.max cars, and only
// the last car of each is checked; with host.batch.max 1 that is every
// car. A batch whose check failed is bisected: the cars ahead of the
// failure that no result vouches for are cut in as many parts plus one as
// slots are free, the last car of each part checked at once (each as if
// the one ahead of it will pass), and so on until the failure is one
// car's own (blameOne). Nothing behind a failure is checked: its chain
// holds the failure. A car whose approved commit is not known yet (no
// check before review), or on record as landed, ends a batch: its own job
// finds it.
func (h *Core) toCheck() []int {
	out, _ := h.batches()
	return out
}

// batches is toCheck, and when the cars at the train's end wait for more
// to be checked with (host.batch.min) until, zero if none waits: fewer
// than host.batch.min of them, the oldest boarded less than
// host.batch.wait ago.
func (h *Core) batches() (out []int, until time.Time) {
	limit := len(h.train) // nothing beyond a failure's depth
	s := 0
	for s < limit && h.inLanding(h.train[s]) {
		s++ // landing: its work passed
	}
	for s < limit {
		e := s // the first car from s with a result or a run, within the limit
		for e < limit && h.train[e].done == nil && h.train[e].run == nil {
			e++
		}
		if i := slices.IndexFunc(h.train[s:min(e, s+h.cfg.Batch)], h.ownJob); i >= 0 {
			// Its approved commit is found, or found landed, by a job of
			// its own: no chain behind it vouches for it.
			out = append(out, s+i)
			s += i + 1
			continue
		}
		switch {
		case e-s >= h.cfg.Batch || e == limit:
			if e == len(h.train) && e-s < h.cfg.BatchMin {
				if at := h.train[s].boarded.Add(h.cfg.BatchWait); h.now.Before(at) {
					return out, at
				}
			}
			last := min(s+h.cfg.Batch, limit) - 1
			out = append(out, last)
			s = last + 1
		case h.train[e].run != nil || passed(h.train[e]):
			s = e + 1 // as if its run will pass
		case e == s:
			// A failure, blamed once it is its own; up to failure_depth
			// cars behind it are checked with it.
			if h.cfg.FailureDepth == 0 {
				return out, time.Time{}
			}
			limit = min(limit, e+1+h.cfg.FailureDepth)
			s = e + 1
		default:
			// As many points as slots are free cut the cars ahead of the
			// failure evenly (with one, the middle): a round of checks
			// narrows it down as far as the slots allow.
			free := max(1, h.cfg.MaxParallel-h.busy())
			m := s + (e-s+free)/(free+1) - 1
			out = append(out, m)
			s = m + 1
		}
	}
	return out, time.Time{}
}

// ownJob reports whether k ends any batch it is in: its approved commit
// is not known yet (no check before review), or is on record as landed.
func (h *Core) ownJob(k *car) bool { return k.tip == "" || h.landedBefore(k) }

// nextCar is the first car that can be checked now, as its job: one with
// no result and no run whose chain is known (every tip ahead found).
func (h *Core) nextCar() *run {
	if h.base == "" {
		for _, k := range h.train {
			if k.run != nil {
				return nil // the first car's job finds the target; the others are made on it
			}
		}
	}
	for _, i := range h.toCheck() {
		k := h.train[i]
		if k.notBefore.After(h.now) || k.afterLanding && h.landing != nil {
			continue
		}
		ids, links := h.chainOf(i)
		if slices.ContainsFunc(links, func(l Link) bool { return l.Tip == "" }) {
			return nil // a car ahead has yet to say what it lands
		}
		h.lastRun++
		r := &run{Job: Job{Run: h.lastRun, Kind: Car, Component: k.c.name, Ref: k.c.ref, Owner: k.c.owner,
			Base: h.base, Ahead: links, Tip: k.tip, Target: h.target, Passed: h.trees.keys(),
			Auditors: h.approvals[k.c.name].Auditors, Squash: h.cfg.Squash}, queued: h.now}
		if h.landing != nil {
			r.Landing = h.landing.Commit
		}
		k.afterLanding = false
		// A failure it cannot be blamed for yet, with nothing under way
		// to tell (the car just ahead has no pass and no run: a batch),
		// is bisected, not run again on the same tree; a retry of one
		// seen before is one run.
		r.Once = k.seen > 0 || i > 0 && h.unvouched(h.train[i-1])
		if p, ok := h.passOf(k.c); ok {
			r.Pass = &p
		}
		k.run, k.c.run = r, r
		k.based, k.chain = h.base, ids
		return r
	}
	return nil
}

// carFinished takes a car's result. The car's chain may have changed while
// it ran: then the run was cancelled and this is not called.
func (h *Core) carFinished(k *car, r *run, o Outcome) {
	k.run = nil
	if k.c.run == r {
		k.c.run = nil
	}
	if _, known := h.trees.get(o.Tree); o.Result == Passed && (!o.Reused || known) {
		if why := h.evidenced(o); why != "" {
			// A pass whose report does not show the checks passing is
			// not one: the chain is checked again.
			o = Outcome{Result: Retry, Line: "the report of its checks does not hold: " + why}
		}
	}
	h.record(Record{Op: OpEnd, Run: r.Run, Component: k.c.name, Result: o.Result.String(), Commit: o.Commit})
	if o.Result == Retry {
		k.tries++
		wait := h.backoff(k.tries)
		k.notBefore = h.now.Add(wait)
		if o.Line != k.said {
			k.said = o.Line
			h.say("queue: cannot check " + k.c.name + " in the train yet: " + o.Line + "; trying again in " + wait.String())
		}
		h.reconcile()
		return
	}
	k.tries, k.said = 0, ""
	if o.Result == Failed {
		k.seen += max(1, o.Tries)
	}
	if i := slices.Index(h.train, k); h.failedBehind(i) < 0 && h.flakeRetry(k.c.name, k.flakes, k.seen, o) {
		// A flaky command's failure is tried again before any bisection
		// (a bisection's own failures are not: they hold the one bisected).
		// Its chain is checked again as it is: nothing else changes.
		k.flakes++
		h.reconcile()
		return
	}
	switch o.Result {
	case Landed:
		// Its approved commit is on the target already: a landing a crash
		// or a stop cut short before MERGED was said. Say it now.
		// The chains behind it were made without it: made again on the
		// target the job found (or, not known, found by the next job).
		h.train = slices.DeleteFunc(h.train, func(x *car) bool { return x == k })
		h.target, h.base, h.landed = o.Base, o.Base, nil
		h.report(k.c, r, o)
		h.emptied()
		h.reconcile()
		return
	case Moved:
		if h.landing != nil {
			// Not where the host left it nor where its landing under way
			// puts it: the landing will find out whose move it was. This
			// car is checked again once the landing is done.
			k.afterLanding = true
			h.reconcile()
			return
		}
		// The target is not where the host left it: nothing was checked.
		h.movedByHand(o.Target)
		h.reconcile()
		return
	}
	if k.tip == "" && o.Tip != "" {
		h.tipFound(k, o.Tip)
	}
	if h.base == "" && o.Base != "" {
		// The first car after a start was made on the target as the shell
		// found it.
		h.base, h.target, k.based = o.Base, o.Base, o.Base
	}
	if o.Result == Passed {
		if o.Reused {
			if _, ok := h.trees.get(o.Tree); !ok {
				// Forgotten meanwhile (the oldest trees are): check it.
				k.based, k.chain = "", nil
				h.reconcile()
				return
			}
		} else {
			h.passedTree(r, o)
		}
	}
	o.Run = r.Run
	k.done = &o
	h.reconcile()
}

// retryLanding lands r's cars again after a wait (the repository was
// locked, or a checkout of the target was dirty).
func (h *Core) retryLanding(r *run, why string) {
	again := h.again(r, "land "+r.Component, why)
	h.landing = again
	for _, l := range again.Landings() {
		h.get(l.Component).run = again
	}
}

// landing is a car that landed since the train's base.
type landing struct {
	id   int
	link Link
}

// eta is when car i is expected to land: when its own check and every
// check ahead of it will have passed, from how long checks usually take.
// Cars waiting for a slot get one max_parallel at a time, in order.
func (h *Core) eta(i int) time.Time {
	per := h.checkTime
	if per <= 0 {
		per = time.Minute
	}
	at, waiting := h.now, 0
	for _, k := range h.train[:i+1] {
		own := h.now
		switch {
		case k.done != nil:
		case k.run != nil && !k.run.started.IsZero():
			own = k.run.started.Add(per)
		default:
			waiting++
			rounds := (waiting + h.busy() - 1) / h.cfg.MaxParallel
			own = h.now.Add(time.Duration(rounds+1) * per)
		}
		if own.After(at) {
			at = own
		}
	}
	return at
}
