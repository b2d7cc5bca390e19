package host

import (
	"time"
)

// enqueue queues a job of kind for c, which has none.
func (h *Core) enqueue(c *comp, kind Kind) {
	h.lastRun++
	r := &run{Job: Job{Run: h.lastRun, Kind: kind, Component: c.name, Ref: c.ref, Owner: c.owner}, queued: h.now}
	if kind == Land {
		if p, ok := h.passes[c.name]; ok && p.Ref == c.ref && p.Owner == c.owner {
			pass := p
			r.Pass = &pass
		}
	}
	c.run = r
	h.order = append(h.order, r)
}

// cancel stops r: dropped from the queue, or, running, stopped by the
// shell; its outcome is ignored when it comes.
func (h *Core) cancel(r *run) {
	if c := h.comps[r.Component]; c != nil && c.run == r {
		c.run = nil
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

// schedule starts queued jobs while slots are free: landings first (they
// unblock other components, and the target must not move under a check of
// what would land more than it must), one landing at a time, then checks
// in the order their READY came.
func (h *Core) schedule() {
	for len(h.running) < h.cfg.MaxParallel {
		r := h.next()
		if r == nil {
			return
		}
		for i, q := range h.order {
			if q == r {
				h.order = append(h.order[:i:i], h.order[i+1:]...)
				break
			}
		}
		r.started = h.now
		h.running[r.Run] = r
		h.record(Record{Op: OpStart, Run: r.Run, Kind: r.Kind.String(), Component: r.Component, Ref: r.Ref})
		h.out.Start = append(h.out.Start, r.Job)
	}
}

func (h *Core) next() *run {
	landing := false
	for _, r := range h.running {
		landing = landing || r.Kind == Land
	}
	var first *run
	for _, r := range h.order {
		if r.notBefore.After(h.now) {
			continue
		}
		if r.Kind == Land && !landing {
			return r
		}
		if r.Kind == Check && first == nil {
			first = r
		}
	}
	return first
}

// Finished handles the end of a job. The outcome of a job that is no
// longer current (cancelled, because its component left CI or approval) is
// dropped: a stale run is never reported.
func (h *Core) Finished(at time.Time, o Outcome) Actions {
	h.at(at)
	r, ok := h.running[o.Run]
	if !ok {
		h.schedule()
		return h.take()
	}
	delete(h.running, o.Run)
	c := h.get(r.Component)
	if c.run != r {
		h.record(Record{Op: OpEnd, Run: r.Run, Component: r.Component, Result: Cancelled.String()})
		h.schedule()
		return h.take()
	}
	c.run = nil
	switch o.Result {
	case Retry:
		h.retry(c, r, o.Line)
	case Moved:
		h.record(Record{Op: OpEnd, Run: r.Run, Component: r.Component, Result: o.Result.String()})
		h.say(mention(r.Owner) + c.name + ": " + r.Ref + " moved while it was checked; checking it again as it is now")
		h.enqueue(c, r.Kind)
	case Cancelled:
		// The shell stopped it by itself (shutting down): the room will
		// say again whether it is wanted.
		h.record(Record{Op: OpEnd, Run: r.Run, Component: r.Component, Result: o.Result.String()})
	default:
		h.verdict(c, r, o)
	}
	h.schedule()
	return h.take()
}

// retry puts r back in the queue after a wait that doubles each time, and
// says why once per reason.
func (h *Core) retry(c *comp, r *run, why string) {
	h.record(Record{Op: OpEnd, Run: r.Run, Component: r.Component, Result: Retry.String()})
	r.tries++
	wait := h.cfg.Backoff << min(r.tries-1, 3)
	if wait > 10*h.cfg.Backoff {
		wait = 10 * h.cfg.Backoff
	}
	h.lastRun++
	again := &run{Job: r.Job, queued: r.queued, notBefore: h.now.Add(wait), tries: r.tries, said: r.said}
	again.Run = h.lastRun
	if why != r.said {
		again.said = why
		h.say("queue: cannot " + r.Kind.String() + " " + c.name + " yet: " + why + "; trying again in " + wait.String())
	}
	c.run = again
	h.order = append(h.order, again)
}

func mention(agent string) string {
	if agent == "" {
		return ""
	}
	return agent + " "
}
