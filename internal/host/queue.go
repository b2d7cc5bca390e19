package host

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// enqueue queues a check for c, which has no job.
func (h *Core) enqueue(c *comp) {
	h.lastRun++
	r := &run{Job: Job{Run: h.lastRun, Kind: Check, Component: c.name, Ref: c.ref, Owner: c.owner, Squash: h.cfg.Squash}, queued: h.now}
	c.run = r
	h.order = append(h.order, r)
}

// cancel stops r: dropped from the queue, or, running, stopped by the
// shell; its outcome is ignored when it comes.
func (h *Core) cancel(r *run) {
	if r.shared() {
		// A shared check one of whose READYs left CI (leave): the others
		// are checked alone.
		for _, w := range append(slices.Clone(r.with), r) {
			if c := h.comps[w.Component]; c != nil && c.run == r && c.phase != inCI {
				c.run = nil
			}
		}
		h.apart(r, false)
	} else if c := h.comps[r.Component]; c != nil && c.run == r {
		c.run = nil
	}
	if h.landing == r {
		if !r.started.IsZero() {
			return // a compare-and-swap under way is not stopped: what it did, it says
		}
		h.landing = nil
	}
	if _, ok := h.running[r.Run]; ok {
		delete(h.running, r.Run)
		h.out.Cancel = append(h.out.Cancel, r.Run)
		h.record(Record{Op: OpEnd, Run: r.Run, Component: r.Component, Result: Cancelled.String()})
		return
	}
	for i, q := range h.order {
		if q == r {
			h.order = append(h.order[:i:i], h.order[i+1:]...)
			return
		}
	}
}

// busy is how many slots are taken: checks and cars running (a landing,
// a scan or a pin takes none).
func (h *Core) busy() int {
	n := 0
	for _, r := range h.running {
		if r.Kind == Check || r.Kind == Car {
			n++
		}
	}
	return n
}

// schedule brings the train up to date, then starts what can start: the
// front car's landing (no slot: a compare-and-swap), then, while slots are
// free, the cars' checks front first (they are what lands next), then the
// checks of READYs in the order they came.
func (h *Core) schedule() {
	h.reconcile()
	if r := h.landing; r != nil && r.started.IsZero() && !r.notBefore.After(h.now) {
		h.begin(r)
	}
	for _, r := range slices.Concat(h.pins, h.notes) {
		if r.started.IsZero() && !r.notBefore.After(h.now) {
			h.begin(r)
		}
	}
	if r := h.nextScan(); r != nil {
		h.begin(r)
	}
	h.head()
	for h.busy() < h.cfg.MaxParallel {
		r := h.nextCar()
		if r == nil {
			r = h.nextCheck()
		}
		if r == nil {
			return
		}
		h.begin(r)
	}
}

func (h *Core) begin(r *run) {
	r.started = h.now
	if r.Kind == Check {
		r.Passed = h.trees.keys() // as they are when it starts
	}
	if r.Kind == Check || r.Kind == Car {
		r.Tries = 1
		if !r.Once {
			r.Tries += h.cfg.Retries
		}
	}
	h.running[r.Run] = r
	h.record(Record{Op: OpStart, Run: r.Run, Kind: r.Kind.String(), Component: r.Component, Ref: r.Ref})
	h.out.Start = append(h.out.Start, r.Job)
}

// nextCheck takes the oldest queued check that is due off the queue. With
// host.batch.max above 1 it is shared: up to that many READYs due, none
// checked before, are merged one on top of the other where they would
// land (the train's chain, onTrain, or the target) and checked once, on
// the last merge; if that passes, each passed (its work is in a tree that
// passed), and the train, which lands them in the order they were
// approved, most often makes that very tree again and checks nothing. If
// it does not pass, they are checked again on the target in parts, down
// to one READY alone, whose verdict is its own (apart): nobody is blamed
// for another's failure.
func (h *Core) nextCheck() *run {
	due, _ := h.checksDue()
	if len(due) == 0 {
		return nil
	}
	picked := make([]*run, len(due))
	for i, at := range due {
		picked[i] = h.order[at]
	}
	h.order = slices.DeleteFunc(h.order, func(r *run) bool { return slices.Contains(picked, r) })
	head := picked[len(picked)-1]
	if head.sharable() {
		head.Base, head.OnTrain = h.onTrain()
	}
	if len(picked) > 1 {
		h.group(head, picked[:len(picked)-1])
	}
	// A shared check's failure is nobody's: its READYs are checked again
	// in parts, which is its retry.
	head.Once = head.shared()
	return head
}

// checksDue is the queued checks to run next, as indices into h.order:
// the oldest due alone if it may not be shared, else up to host.batch.max
// due that may. Fewer of those than host.batch.min wait for more until the
// oldest of them waited host.batch.wait (until, zero if none waits); a
// check that may not be shared goes meanwhile.
func (h *Core) checksDue() (due []int, until time.Time) {
	for i, r := range h.order {
		switch {
		case r.notBefore.After(h.now):
		case !r.sharable() && len(due) == 0:
			return []int{i}, time.Time{}
		case r.sharable():
			due = append(due, i)
		}
		if len(due) == h.cfg.Batch {
			break
		}
	}
	if len(due) == 0 || len(due) >= h.cfg.BatchMin {
		return due, time.Time{}
	}
	if until = h.order[due[0]].queued.Add(h.cfg.BatchWait); !h.now.Before(until) {
		return due, time.Time{}
	}
	for i, r := range h.order {
		if !r.notBefore.After(h.now) && !r.sharable() {
			return []int{i}, until
		}
	}
	return nil, until
}

// group makes head a shared check with the READYs of with merged ahead of
// its own.
func (h *Core) group(head *run, with []*run) {
	head.with, head.Ahead = with, nil
	for _, w := range with {
		head.Ahead = append(head.Ahead, Link{Component: w.Component, Ref: w.Ref, Owner: w.Owner})
		h.get(w.Component).run = head
	}
}

// sharable reports whether r may be checked with others: a first try.
func (r *run) sharable() bool { return !r.alone && r.tries == 0 && r.flakes == 0 }

// shared reports whether r is a shared check: with other READYs, or on the
// train.
func (r *run) shared() bool { return len(r.with) > 0 || len(r.OnTrain) > 0 }

// onTrain is where a READY would land if it were approved now (with
// host.batch.max above 1): the train's base and chain, every car in it;
// none when the train is empty, or holds a car whose approved commit is
// not known or whose check did not pass (a READY is not checked on a
// failure). A READY checked there and approved next is a car whose chain
// is that very tree: its check in the train is the one it had.
func (h *Core) onTrain() (string, []Link) {
	if h.cfg.Batch < 2 || h.base == "" || len(h.train) == 0 {
		return "", nil
	}
	for _, k := range h.train {
		if k.tip == "" || k.done != nil && k.done.Result != Passed {
			return "", nil
		}
	}
	_, links := h.chainOf(len(h.train))
	return h.base, links
}

// apart puts back the READYs of a shared check r that are still its, at
// the front of the queue: each to be checked alone, or, split, in parts,
// each checked together on the target (a bisection: a part that passes
// passed, one that fails is split again, down to one READY checked alone,
// whose verdict is its own). There are as many parts as slots are free
// (at least two): a round of checks narrows the failure as far as the
// slots allow.
func (h *Core) apart(r *run, split bool) {
	var back []*run
	for _, w := range append(slices.Clone(r.with), r) {
		c := h.get(w.Component)
		if c.run != r {
			continue
		}
		h.lastRun++
		again := &run{Job: Job{Run: h.lastRun, Kind: Check, Component: w.Component, Ref: w.Ref, Owner: w.Owner, Squash: w.Squash},
			queued: w.queued, alone: true}
		c.run = again
		back = append(back, again)
	}
	if split && len(back) > 1 {
		parts := parts(back, max(2, h.cfg.MaxParallel-h.busy()))
		back = nil
		for _, part := range parts {
			head := part[len(part)-1]
			if len(part) > 1 {
				h.group(head, part[:len(part)-1])
				head.Once = true
			}
			back = append(back, head)
		}
	}
	h.order = append(back, h.order...)
}

// parts cuts rs into n parts in order (fewer if rs is shorter), their
// sizes at most one apart.
func parts[T any](rs []T, n int) [][]T {
	n = min(n, len(rs))
	out := make([][]T, 0, n)
	for i := range n {
		out = append(out, rs[i*len(rs)/n:(i+1)*len(rs)/n])
	}
	return out
}

// sharedFinished takes the end of a shared check: each passed, or the
// READYs are checked again in parts.
func (h *Core) sharedFinished(r *run, o Outcome) {
	h.record(Record{Op: OpEnd, Run: r.Run, Component: r.Component, Result: o.Result.String()})
	all := append(slices.Clone(r.with), r)
	if o.Result != Passed || len(o.Chain) != len(r.OnTrain)+len(all) || h.evidenced(o) != "" {
		if o.Result != Cancelled {
			h.apart(r, true)
		}
		return
	}
	if !o.Reused {
		h.passedTree(r, o)
	}
	on := h.cfg.Target
	for _, l := range r.OnTrain {
		on += "+" + l.Component
	}
	names := make([]string, len(all))
	for i, w := range all {
		names[i] = w.Component
	}
	for i, w := range all {
		c := h.get(w.Component)
		c.run = nil
		m := o.Chain[len(r.OnTrain)+i]
		mo := Outcome{Result: Passed, Commit: m.Commit, Tree: m.Tree, Tip: m.Tip, Base: o.Base, Flaky: o.Flaky,
			In: o.Tree, Reused: true, Line: fmt.Sprintf("checked merged with %s as %s: one run for %d", on, strings.Join(names, "+"), len(all))}
		wr := &run{Job: w.Job}
		wr.Run = r.Run
		h.report(c, wr, mo)
	}
}

// Finished handles the end of a job. The outcome of a job that is no
// longer current (cancelled, because its component left CI or approval,
// or a car whose chain changed) is dropped: a stale run is never reported.
func (h *Core) Finished(at time.Time, o Outcome) Actions {
	h.at(at)
	r, ok := h.running[o.Run]
	if !ok {
		h.schedule()
		return h.take()
	}
	delete(h.running, o.Run)
	h.learn(o)
	if (o.Result == Passed || o.Result == Failed) && (r.Kind == Check || r.Kind == Car) && !o.Reused {
		h.timed(h.now.Sub(r.started))
		h.checkRuns++
	}
	switch r.Kind {
	case Land:
		h.landFinished(r, o)
		h.schedule()
		return h.take()
	case Scan:
		h.scanFinished(r, o)
		h.schedule()
		return h.take()
	case Pin:
		h.pinFinished(r, o)
		h.schedule()
		return h.take()
	case Note:
		h.noteFinished(r, o)
		h.schedule()
		return h.take()
	case Head:
		h.headFinished(r, o)
		h.schedule()
		return h.take()
	}
	c := h.get(r.Component)
	if c.run != r {
		h.record(Record{Op: OpEnd, Run: r.Run, Component: r.Component, Result: Cancelled.String()})
		h.schedule()
		return h.take()
	}
	switch {
	case r.Kind == Car:
		if k := h.carOf(c); k != nil && k.run == r {
			h.carFinished(k, r, o)
		}
	case r.shared():
		h.sharedFinished(r, o)
	default:
		h.checkFinished(c, r, o)
	}
	h.schedule()
	return h.take()
}

// checkFinished takes the end of a check of a READY.
func (h *Core) checkFinished(c *comp, r *run, o Outcome) {
	c.run = nil
	switch o.Result {
	case Retry:
		h.retry(c, r, o.Line)
	case Moved:
		h.record(Record{Op: OpEnd, Run: r.Run, Component: r.Component, Result: o.Result.String()})
		h.say(mention(r.Owner) + c.name + ": " + r.Ref + " moved while it was checked; checking it again as it is now")
		h.enqueue(c)
	case Cancelled:
		// The shell stopped it by itself (shutting down): the room will
		// say again whether it is wanted.
		h.record(Record{Op: OpEnd, Run: r.Run, Component: r.Component, Result: o.Result.String()})
	default:
		if o.Result == Passed && o.Reused {
			if _, ok := h.trees.get(o.Tree); !ok {
				// Forgotten meanwhile (the oldest trees are): checked, then.
				h.record(Record{Op: OpEnd, Run: r.Run, Component: r.Component, Result: Retry.String()})
				h.enqueue(c)
				return
			}
		}
		if o.Result == Passed && !o.Reused {
			if why := h.evidenced(o); why != "" {
				// A pass whose report does not show the checks passing
				// is not one: checked again.
				h.retry(c, r, "the report of its checks does not hold: "+why)
				return
			}
		}
		if h.flakeRetry(c.name, r.flakes, o.Tries, o) {
			h.record(Record{Op: OpEnd, Run: r.Run, Component: r.Component, Result: Retry.String()})
			again := h.rerun(r, h.now)
			again.flakes = r.flakes + 1
			c.run = again
			h.order = append(h.order, again)
			return
		}
		h.verdict(c, r, o)
	}
}

// timed keeps how long checks take (a moving average), for the train's
// expected landing times.
func (h *Core) timed(d time.Duration) {
	if h.checkTime == 0 {
		h.checkTime = d
		return
	}
	h.checkTime = (3*h.checkTime + d) / 4
}

// backoff is the wait before a job the repository could not do is tried
// for the tries-th time: doubling, up to ten times the first.
func (h *Core) backoff(tries int) time.Duration {
	wait := h.cfg.Backoff << min(tries-1, 3)
	return min(wait, 10*h.cfg.Backoff)
}

// retry puts r back in the queue after a wait that doubles each time, and
// says why once per reason.
func (h *Core) retry(c *comp, r *run, why string) {
	h.record(Record{Op: OpEnd, Run: r.Run, Component: r.Component, Result: Retry.String()})
	again := h.again(r, r.Kind.String()+" "+c.name, why)
	c.run = again
	h.order = append(h.order, again)
}

// again is r to be tried again (what, as said: "land api") after a wait
// that doubles each time; why is said once per reason.
func (h *Core) again(r *run, what, why string) *run {
	wait := h.backoff(r.tries + 1)
	next := h.rerun(r, h.now.Add(wait))
	next.tries, next.said = r.tries+1, r.said
	if why != r.said {
		next.said = why
		h.say("queue: cannot " + what + " yet: " + why + "; trying again in " + wait.String())
	}
	return next
}

// rerun is r's job again, as a run of its own, due at notBefore.
func (h *Core) rerun(r *run, notBefore time.Time) *run {
	h.lastRun++
	next := &run{Job: r.Job, queued: r.queued, notBefore: notBefore}
	next.Run = h.lastRun
	return next
}

func mention(agent string) string {
	if agent == "" {
		return ""
	}
	return agent + " "
}
