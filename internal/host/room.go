package host

import (
	"strings"
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// Heard handles one line said in the room by from (the host's own lines
// are the shell's to drop).
func (h *Core) Heard(at time.Time, from string, verified bool, line string) Actions {
	h.at(at)
	switch {
	case from == h.cfg.Self || from == "@server":
	case from == h.cfg.Coordinator:
		h.fromForeman(strings.TrimSpace(line))
	case h.cfg.Verified && !verified:
	default:
		h.fromAgent(from, line)
	}
	h.schedule()
	return h.take()
}

// fromAgent reads a line of a builder, an auditor or a human.
func (h *Core) fromAgent(from, line string) {
	cmd, err := h.reader.Read(line)
	if err != nil || cmd.Verb == protocol.NoVerb {
		return
	}
	switch cmd.Verb {
	case protocol.Ready:
		h.checkedIn(from, cmd.Component, cmd.PR)
		h.ready(from, cmd.Component, cmd.PR)
	case protocol.Progress, protocol.Blocked, protocol.Conflict:
		h.checkedIn(from, cmd.Component, cmd.Branch)
	case protocol.Abort:
		if c := h.comps[cmd.Component]; c != nil && c.owner == from && c.phase != merged {
			// A departure once foreman takes it (wip.go, abortHeard): it
			// refuses one from a builder that no longer owns c, which the
			// host may not have heard yet.
			h.abortHeard(c, from)
		}
	case protocol.Audit:
		if cmd.Verdict == protocol.Pass {
			h.auditPassed(from, cmd.Component)
		}
	case protocol.Status:
		h.answerStatus(cmd.Component)
	}
}

// checkedIn is a check-in of from's about c, naming ref (or not): the work
// may have moved. Before the host knows who owns c (it joined after the
// ACK, and foreman's STATUS answer is not here yet), the ref named is kept
// until the answer says whether from owns c: the answer was decided before
// this line, so it cannot say where the work is now.
func (h *Core) checkedIn(from, name, ref string) {
	c := h.comps[name]
	if c == nil && h.declared[name] && ref != "" {
		c = h.get(name)
	}
	switch {
	case c == nil:
	case c.owner == from && ref != "":
		h.named(c, from, ref)
	case c.owner == from:
		h.touched(c)
	case c.owner == "" && c.phase == unknown && ref != "":
		c.named = &ready{from, ref}
	}
}

// ready infers what foreman does, silently, with a READY: with CI gating on
// the owner's READY while c is built puts c in CI, which is the host's to
// check.
func (h *Core) ready(from, name, ref string) {
	if !h.cfg.Gating {
		return // READY goes straight to review: foreman says REVIEW
	}
	c := h.comps[name]
	if c == nil {
		if !h.declared[name] {
			return // a name foreman never said: anyone may write anything
		}
		c = h.get(name)
	}
	switch {
	case c.phase == unknown:
		c.waiting = &ready{from, ref} // until a STATUS answer says who owns c
	case c.owner != from:
	case c.phase == building && h.cfg.BranchNamespaces && !InNamespace(from, ref):
		// foreman put c in CI: the host's CI FAIL steps it back (FIX),
		// and nothing of the branch is fetched, checked or landed.
		c.phase, c.ref, c.dupe = reported, ref, ""
		h.say("CI " + c.name + " FAIL " + bound(outsideNamespace(from, ref), detailRoom))
	case c.phase == building:
		c.phase, c.ref, c.dupe = inCI, ref, ""
		h.enqueue(c)
	case c.phase == inCI:
		// foreman refuses a second READY while c waits for CI, unless it
		// had already stepped c back (a FIX the host has not heard yet).
		c.dupe = ref
	}
}

// auditPassed: in merge mode external an AUDIT PASS approves c, silently.
// The host asks foreman (STATUS c) rather than guess: it lands only what
// foreman's answer says is approved.
func (h *Core) auditPassed(from, name string) {
	c := h.comps[name]
	if !h.cfg.External || c == nil || c.asked || from == c.owner {
		return
	}
	if len(h.cfg.Auditors) > 0 && !contains(h.cfg.Auditors, from) {
		return
	}
	c.auditor = from
	if c.phase == inCI || c.phase == reported || c.phase == unknown {
		// foreman may have said REVIEW already (the host's CI PASS was
		// handled) and be slow to send it: ask once the REVIEW is here.
		c.early = true
		return
	}
	if c.phase != review {
		return
	}
	c.asked = true
	h.say("STATUS " + name)
}

// fromForeman reads one of foreman's lines: facts, in foreman's order.
func (h *Core) fromForeman(line string) {
	r, err := protocol.ReadReply(line)
	if err != nil {
		return
	}
	switch r.Verb {
	case protocol.ReplyTasks:
		for _, name := range r.Components {
			if c := h.comps[name]; c != nil {
				h.abortTaken(c) // c is pending: an ABORT of its owner's was taken
				h.leave(c, pending)
				c.owner = ""
			} else {
				h.get(name).phase = pending
			}
		}
	case protocol.ReplyAck, protocol.ReplyFix:
		c := h.get(r.Subject)
		redo := r.Verb == protocol.ReplyFix && c.dupe != "" && c.owner == r.Agent
		if hand, ok := protocol.ReadHandover(r.Text); ok && r.Verb == protocol.ReplyAck {
			// foreman names the departure the new builder takes over
			// from: that one, whatever the host believed since.
			h.abortTaken(c)
			ho := c.wip.handoff
			known := ho != nil && ho.to == "" && ho.from == hand.From // the host has it, not handed over yet
			if !known && c.owner == hand.From && hand.From != r.Agent {
				h.departed(c, c.owner, hand.Why) // its line, the host missed
			}
		} else if c.owner != "" && c.owner != r.Agent {
			h.departed(c, c.owner, "ASSIGN") // given to another without a line the host read
		}
		h.leave(c, building)
		c.owner = r.Agent
		if r.Verb == protocol.ReplyAck {
			h.acked(c, r.Agent)
		}
		if redo {
			// A READY came while the host thought c was in CI; foreman may
			// have taken it after this FIX: ask.
			c.dupe = ""
			h.say("STATUS " + c.name)
		}
	case protocol.ReplyTimeout, protocol.ReplyRetry:
		c := h.get(r.Subject)
		h.departed(c, r.Agent, r.Verb.String())
		h.leave(c, pending)
		c.owner = ""
	case protocol.ReplyReview:
		c := h.get(r.Subject)
		early := c.early
		h.leave(c, review)
		c.owner, c.ref = r.Agent, r.PR
		if early && h.cfg.External {
			c.asked = true
			h.say("STATUS " + c.name)
		}
	case protocol.ReplyMerged:
		h.leave(h.get(r.Subject), merged)
	case protocol.ReplyEscalate:
		if r.Subject != protocol.BuildSubject && protocol.Escalation(r.Code) == protocol.HardBlocker {
			// Only its owner's ABORT holds c as a hard blocker, and the
			// owner let c go.
			c := h.get(r.Subject)
			h.abortTaken(c)
			h.leave(c, held)
			c.owner = ""
		} else if r.Subject != protocol.BuildSubject && protocol.Escalation(r.Code).Holds() {
			h.leave(h.get(r.Subject), held)
		}
	case protocol.ReplyOK:
		h.confirmed(r.Text)
	case protocol.ReplyStatus:
		h.status(r.Subject, r)
	case protocol.ReplyReject:
		if r.Agent == h.cfg.Self {
			h.refused(r.Subject, r.Text)
		} else if c := h.comps[r.Subject]; c != nil && c.wip.aborting != nil && c.wip.aborting.from == r.Agent {
			c.wip.aborting = nil // its ABORT was refused: no departure
		}
	}
}

// confirmed reads OK <command>: an operator's (or the merger's) command
// foreman accepted, perhaps with more after it (OK RELEASE api from @b1).
func (h *Core) confirmed(command string) {
	cmd, err := protocol.ReadConfirmed(command)
	if err != nil || cmd.Component == "" {
		return
	}
	c := h.get(cmd.Component)
	switch cmd.Verb {
	case protocol.Merged:
		h.leave(c, merged)
	case protocol.Release:
		h.departed(c, c.owner, "RELEASE")
		h.leave(c, pending)
		c.owner = ""
	case protocol.Assign:
		if cmd.Agent != c.owner {
			h.departed(c, c.owner, "ASSIGN")
		}
		h.leave(c, unknown) // ACK says where it goes
	case protocol.Resolve:
		h.leave(c, unknown) // ACK, or TASKS, says where it goes
	}
}

// refused is a REJECT of one of the host's own lines: nothing changed.
// After a refused verdict the host no longer knows where c is: the next
// view (STATUS) says.
func (h *Core) refused(name, reason string) {
	c := h.comps[name]
	switch {
	case c == nil:
	case strings.HasPrefix(reason, "unknown component"):
		delete(h.comps, name)
	case c.phase == reported:
		c.phase = unknown
	}
}

// status reads a STATUS line, foreman's view of c when it answered. It
// starts what the view asks for (a check for c in CI, a landing for c
// approved) and learns the owner; it never stops anything: the view may be
// older than a READY the host heard since, and every way out of CI is said
// by its own line, which stops the run then.
func (h *Core) status(name string, r protocol.Heard) {
	state := r.State
	c := h.get(name)
	c.gen = h.gen
	if !h.synced {
		h.synced = true
		for _, d := range h.cfg.Components {
			if cc := h.comps[d]; cc == nil || cc.gen != h.gen {
				h.synced = false
				break
			}
		}
	}
	if owner := r.Field("owner"); owner != "" {
		c.owner = owner
	}
	// After a restart, or a join after the check-ins: where the work is,
	// merged with the others once the phase below says c is in flight.
	learned := ""
	if b := r.Field("branch"); b != "" && b != c.wip.branch && c.owner != "" {
		learned = b
	}
	if pr := r.Field("pr"); pr != "" {
		c.ref = pr
	}
	switch {
	case c.phase == reported || c.phase == merged && state != "merged":
		// The host's own verdict or landing is newer than this view.
	case state == "ci":
		if c.phase != inCI || c.run == nil {
			c.phase = inCI
			if c.run == nil && h.cfg.Gating {
				h.enqueue(c)
			}
		}
	case state == "review" && r.Field("approved") == "yes" && h.cfg.External:
		h.approve(c, r)
	case state == "review":
		c.asked = false
		if c.phase == unknown || c.phase == building {
			c.phase = review
		}
	case c.phase == unknown:
		switch state {
		case "pending":
			c.phase = pending
		case "building", "blocked":
			c.phase = building
		case "merged":
			c.phase = merged
		case "held":
			c.phase = held
		}
	}
	if learned != "" {
		h.named(c, c.owner, learned)
	}
	if n := c.named; n != nil && c.phase != unknown {
		c.named = nil
		if n.from == c.owner {
			h.named(c, n.from, n.ref) // heard after the view was decided: newer
		}
	}
	if w := c.waiting; w != nil && c.phase != unknown {
		c.waiting = nil
		h.ready(w.from, name, w.ref)
	}
}

// leave moves c to phase p, out of wherever it was: its run, if any, is
// stale and stops, and will never be reported; its car, if any, leaves
// the train.
func (h *Core) leave(c *comp, p phase) {
	c.phase, c.asked, c.waiting, c.named, c.early = p, false, nil, nil, false
	if p != building {
		c.dupe = ""
	}
	if p != review {
		c.auditor = "" // an AUDIT PASS heard early stays for the REVIEW it answers
	}
	if c.run != nil {
		h.cancel(c.run)
	}
	h.alight(c)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
