package host

import (
	"slices"
	"strings"
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// Work in progress (contract section 10). The host knows where each
// component's work is (the ref its builder named by PROGRESS branch=, or
// its READY) and does two things with it:
//
//   - Overlaps: when a builder checks in about c, c's ref may have moved:
//     the host merges it with every other ref in flight (a Scan job, no
//     working tree), at most once per host.overlap_interval for c, and says
//     OVERLAP c d files once per pair and set of files.
//   - Handoffs: when c leaves a builder unmerged, the tip of the ref that
//     builder named is pinned as refs/foreman/handoff/<c>/<n> (a Pin job),
//     so that a force-push or a deletion cannot lose it, and the new builder
//     is told once its ACK is said.
//
// Neither takes a check slot: both are a few git commands.

// wip is what the host knows of c's work in progress.
type wip struct {
	branch   string // the last ref named for c
	by       string // who named it
	scanned  time.Time
	due      bool // a scan is wanted once the interval allows
	scanning *run

	handoff *handoff // the last departure's pin, until it is said
	// aborting is an ABORT of the owner's that foreman has not shown it
	// took: its pin is made at once (the branch as the builder left it),
	// its handoff armed once foreman takes it, dropped if foreman refuses.
	aborting *handoff
}

// handoff is a departed builder's work being pinned, then handed over.
type handoff struct {
	from, branch string
	to           string // the new builder, once foreman's ACK names one
	pin          *run
	n            int
	commit       string // pinned; "" until the Pin job says
	done         bool   // pinned or found nothing to pin
}

// inFlight reports whether c's work is in progress: building, blocked, in
// CI or in review (contract section 10).
func (c *comp) inFlight() bool {
	switch c.phase {
	case building, inCI, review, approved, reported:
		return c.owner != ""
	}
	return false
}

// named notes that from named ref for c (PROGRESS branch=, READY), and
// asks for a scan: the ref may have moved.
func (h *Core) named(c *comp, from, ref string) {
	if _, err := protocol.CheckRef(ref); err != nil {
		return // a full commit id or a URL: nothing to watch
	}
	if h.cfg.BranchNamespaces && !InNamespace(from, ref) {
		// Another's branch is not from's work: neither watched as it,
		// nor pinned as what from leaves to the next builder.
		return
	}
	c.wip.branch, c.wip.by = ref, from
	h.touched(c)
}

// touched asks for a scan of c's ref: its builder checked in, and may have
// pushed.
func (h *Core) touched(c *comp) {
	if c.wip.branch != "" && c.inFlight() {
		c.wip.due = true
	}
}

// departed is c leaving builder from unmerged (TIMEOUT, RETRY, ABORT,
// RELEASE, ASSIGN to another): the work from pushed to the ref it named is
// pinned.
func (h *Core) departed(c *comp, from, why string) {
	if ho := h.pin(c, from); ho != nil {
		c.wip.handoff = ho
		c.wip.by = "" // once: the next builder names it again if it goes on there
	}
}

// pin starts pinning what from pushed to the ref it named for c, if it
// named one.
func (h *Core) pin(c *comp, from string) *handoff {
	if from == "" || c.phase == merged || c.wip.branch == "" || c.wip.by != from {
		return nil
	}
	h.lastRun++
	r := &run{Job: Job{Run: h.lastRun, Kind: Pin, Component: c.name, Ref: c.wip.branch, Owner: from}, queued: h.now}
	h.pins = append(h.pins, r)
	return &handoff{from: from, branch: c.wip.branch, pin: r}
}

// abortHeard is c's owner saying ABORT. foreman takes it, unless the
// builder no longer owns c (its ACK may have been decided before an
// earlier departure the host heard after it): a departure only once
// foreman's TASKS, hard-blocker ESCALATE or an ACK naming it says so
// (abortTaken). The pin is made now, what the branch holds as it leaves.
func (h *Core) abortHeard(c *comp, from string) {
	ho := h.pin(c, from)
	if ho == nil {
		ho = &handoff{from: from}
	}
	c.wip.aborting = ho
}

// abortTaken: foreman took c's pending ABORT: its departure, with the pin
// made when it was heard.
func (h *Core) abortTaken(c *comp) {
	ho := c.wip.aborting
	if ho == nil {
		return
	}
	c.wip.aborting = nil
	if ho.pin != nil {
		c.wip.handoff = ho
		c.wip.by = ""
	}
}

// acked reads foreman's ACK c @b: a pending handoff goes to b, once pinned.
func (h *Core) acked(c *comp, to string) {
	if ho := c.wip.handoff; ho != nil && ho.from != to && ho.to == "" {
		ho.to = to
		h.handOver(c)
	}
}

// handOver says the handoff line once the pin is made and the new builder
// known.
func (h *Core) handOver(c *comp) {
	ho := c.wip.handoff
	if ho == nil || !ho.done || ho.to == "" {
		return
	}
	c.wip.handoff = nil
	if ho.commit == "" {
		return
	}
	line, ok := protocol.HandoffLine(protocol.Handoff{To: ho.to, Component: c.name, N: ho.n, Commit: ho.commit,
		From: ho.from, Branch: ho.branch})
	if ok {
		h.say(line)
	}
}

// pinFinished takes the end of a Pin job.
func (h *Core) pinFinished(r *run, o Outcome) {
	h.pins = slices.DeleteFunc(h.pins, func(p *run) bool { return p == r })
	h.record(Record{Op: OpEnd, Run: r.Run, Component: r.Component, Result: o.Result.String(), Commit: o.Commit})
	c := h.comps[r.Component]
	if c == nil {
		return
	}
	ho := c.wip.handoff
	if ab := c.wip.aborting; ab != nil && ab.pin == r {
		ho = ab
	}
	if ho == nil || ho.pin != r {
		return
	}
	if o.Result == Retry {
		// The repository could not do it now (locked): the same wait as a
		// check's or a landing's, then again; the work stays unpinned,
		// and unannounced, until it is.
		again := h.again(r, "pin the work "+ho.from+" left on "+c.name, o.Line)
		ho.pin = again
		h.pins = append(h.pins, again)
		return
	}
	ho.done = true
	if o.Result == Pinned {
		ho.commit, ho.n = o.Commit, o.N
	}
	h.handOver(c)
}

// nextScan is the scan due first, as its job: the component whose ref may
// have moved, merged with every other ref in flight. One scan at a time.
func (h *Core) nextScan() *run {
	if h.scanning != nil {
		return nil
	}
	var pick *comp
	for _, name := range h.scanOrder() {
		c := h.comps[name]
		if !c.wip.due || !c.inFlight() || c.wip.branch == "" {
			c.wip.due = c.wip.due && c.inFlight()
			continue
		}
		if !c.wip.scanned.IsZero() && h.now.Before(c.wip.scanned.Add(h.cfg.OverlapInterval)) {
			continue
		}
		pick = c
		break
	}
	if pick == nil {
		return nil
	}
	var others []Link
	for _, name := range h.scanOrder() {
		d := h.comps[name]
		if d != pick && d.inFlight() && d.wip.branch != "" {
			others = append(others, Link{Component: d.name, Ref: d.wip.branch, Owner: d.owner})
		}
	}
	pick.wip.due = false
	if len(others) == 0 {
		return nil // nothing to merge it with; the next ref named is merged with it
	}
	pick.wip.scanned = h.now
	h.lastRun++
	r := &run{Job: Job{Run: h.lastRun, Kind: Scan, Component: pick.name, Ref: pick.wip.branch, Owner: pick.owner, Others: others},
		queued: h.now}
	h.scanning = r
	return r
}

// scanOrder is the components in a fixed order: declared first, then the
// rest by name, so that the same room gives the same scans.
func (h *Core) scanOrder() []string {
	names := make([]string, 0, len(h.comps))
	for name := range h.comps {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// scanFinished says each overlap the scan found, once per pair and set of
// files; never with a component merged meanwhile, or no longer in flight.
func (h *Core) scanFinished(r *run, o Outcome) {
	h.scanning = nil
	h.record(Record{Op: OpEnd, Run: r.Run, Component: r.Component, Result: o.Result.String()})
	c := h.comps[r.Component]
	if c == nil || !c.inFlight() || c.wip.branch != r.Ref {
		return
	}
	for _, ov := range o.Overlaps {
		d := h.comps[ov.With]
		if d == nil || d == c || !d.inFlight() || len(ov.Files) == 0 {
			continue
		}
		files := slices.Clone(ov.Files)
		slices.Sort(files)
		a, b := c.name, d.name
		if b < a {
			a, b = b, a
		}
		key := a + "\x00" + b + "\x00" + strings.Join(files, "\x00")
		if h.overlaps[key] {
			continue
		}
		h.overlaps[key] = true
		h.say(protocol.OverlapLine(c.name, d.name, files))
	}
}

// Overlap is one other ref in flight that a scanned ref would conflict
// with, and the files.
type Overlap struct {
	With  string
	Files []string
}
