package coordinator

import (
	"fmt"
	"strings"

	"github.com/agentforeman/foreman/protocol"
)

// claim handles CLAIM c. The checks run in the contract's order (section 5);
// the first that applies answers. Two claims for one component are settled
// by the order the room delivered them: the first is ACKed, so the second
// finds c owned.
func (e *Engine) claim(agent, name string) {
	if e.halted != nil {
		e.say(protocol.Reject(name, agent, fmt.Sprintf("build halted by a dependency cycle (%s); claims wait until an operator breaks it", e.graph.Format(e.halted))))
		return
	}
	if e.paused {
		e.say(protocol.Reject(name, agent, "build paused by an operator; CLAIM again after RESUME"))
		return
	}
	if e.buildOver() {
		e.say(protocol.Reject(name, agent, fmt.Sprintf("the build spent %s; claims wait for an operator's BUDGET build", figures(e.spend.build, e.limit(protocol.BuildSubject)))))
		return
	}
	c, ok := e.lookup(agent, name)
	if !ok {
		return
	}
	switch {
	case c.owner == agent:
		e.say(protocol.Ack(c.name, agent, "")) // it may have missed the first ACK
	case c.owner != "":
		e.reject(c, agent, "owned by %s; CLAIM another component from TASKS", c.owner)
	case c.state == Merged:
		e.reject(c, agent, "already merged; CLAIM another component from TASKS")
	case c.state == Held:
		e.reject(c, agent, "held for a human (%s); claims wait until an operator decides", c.hold)
	case c.isBarred(agent):
		e.reject(c, agent, "you used all %d audit attempts on %s; CLAIM another component", e.rules.AuditAttempts, c.name)
	case e.agentOver(agent):
		e.reject(c, agent, "you spent %s; claims wait for an operator's BUDGET %s", figures(e.agentSpend(agent, false).spent, e.limit(agent)), agent)
	case c.unmerged > 0:
		e.reject(c, agent, "waiting on %s (not merged yet); CLAIM one from TASKS", strings.Join(e.unmergedDeps(c), ", "))
	case e.owned[agent] >= e.rules.MaxClaimsPerAgent:
		e.reject(c, agent, "you already own %s (at most %d at a time); finish or ABORT first", strings.Join(e.ownedBy(agent), ", "), e.rules.MaxClaimsPerAgent)
	default:
		e.assign(c, agent)
	}
}

// assign gives c to agent (after CLAIM, or by an operator's ASSIGN or
// RESOLVE) and ACKs it, telling the new builder what the last one left.
func (e *Engine) assign(c *component, agent string) {
	if c.owner != "" && c.owner != agent {
		c.left = e.trailOf(c, "ASSIGN", "")
		e.clearOwner(c)
	}
	if c.owner == "" {
		c.owner = agent
		c.since = e.now
		e.took(agent, c)
		e.owned[agent]++
		c.progress, c.hasProgress, c.pr = 0, false, ""
		c.ciFails, c.ciConflict = 0, 0 // CI attempts are the new builder's own
	}
	if c.state != Blocked { // ASSIGNed to its own builder while it waits: it still waits
		e.setState(c, Building)
	}
	c.hold = ""
	c.overdue, c.approved = false, false
	if c.isBarred(agent) { // only an operator's ASSIGN gets here: fresh attempts
		c.barred = without(c.barred, agent)
		c.clearAuditFails(agent)
	}
	c.timedOut = without(c.timedOut, agent)
	if c.disputes[agent] > 0 {
		delete(c.disputes, agent)
	}
	e.checkin(c)
	e.say(protocol.Ack(c.name, agent, e.ackContext(c)))
	c.left = nil
}

// ackContext tells a builder where the last one stopped.
func (e *Engine) ackContext(c *component) string {
	t := c.left
	if t == nil {
		return ""
	}
	var parts []string
	switch t.why {
	case "ABORT":
		parts = append(parts, fmt.Sprintf("after ABORT by %s (%s)", t.agent, t.reason))
	case "RETRY":
		parts = append(parts, fmt.Sprintf("after RETRY of %s (%d/%d audits failed)", t.agent, e.rules.AuditAttempts, e.rules.AuditAttempts))
	default:
		parts = append(parts, fmt.Sprintf("after %s of %s", t.why, t.agent))
	}
	var left []string
	if t.hasProgress {
		left = append(left, fmt.Sprintf("progress %d%%", t.progress))
	}
	if t.pr != "" {
		left = append(left, "PR "+t.pr)
	}
	if t.findings != "" {
		left = append(left, "last audit: "+t.findings)
	}
	if len(left) == 0 {
		left = append(left, "no progress reported")
	}
	context := parts[0] + ": " + strings.Join(left, ", ")
	if b := handedOver(t); b != "" {
		// First, before anything a sender wrote: protocol.HandedBranch
		// reads it there, and the bound on a reply cuts only the end.
		context = b + " " + context
	}
	return context
}

// trailOf records what c's owner leaves behind.
func (e *Engine) trailOf(c *component, why, reason string) *trail {
	return &trail{agent: c.owner, why: why, reason: reason, progress: c.progress,
		hasProgress: c.hasProgress, pr: c.pr, findings: c.findings, branch: c.branch}
}

// clearOwner takes c from its owner: the timer stops and c stops waiting.
// The caller sets c's next state.
func (e *Engine) clearOwner(c *component) {
	if c.owner == "" {
		return
	}
	e.left(c.owner, c)
	if e.owned[c.owner]--; e.owned[c.owner] <= 0 {
		delete(e.owned, c.owner)
	}
	c.owner = ""
	e.timers.stop(&c.timer)
	e.stopWaiting(c)
}

// dropOwner takes c from its owner for good: whoever waited on c's files
// may go on, since nobody is changing them now.
func (e *Engine) dropOwner(c *component) {
	if c.owner != "" {
		e.clearOwner(c)
		e.unblockWaiters(c, false)
	}
}

// release takes c from its owner and makes it pending again (TIMEOUT, RETRY,
// soft ABORT, RELEASE). TASKS follows if c can be claimed.
func (e *Engine) release(c *component) {
	e.dropOwner(c)
	e.setState(c, Pending)
	c.hold = ""
	c.overdue, c.approved = false, false
	if e.claimable(c) {
		e.announceTasks()
	}
}

// claimable reports whether c would be ACKed to an agent free to take it.
func (e *Engine) claimable(c *component) bool {
	return c.state == Pending && c.owner == "" && c.unmerged == 0
}

// announceTasks notes that something became claimable. TASKS, with every
// claimable component in declaration order, is said once at the end of the
// step (a line handled, or the timers of one instant), so that a step that
// frees many components says one TASKS, listing them all.
func (e *Engine) announceTasks() { e.tasksDue = true }

// flushTasks says the TASKS a step made due, unless the build is halted or
// nothing is claimable after all. While paused every claim is refused, so
// nothing is claimable (contract section 3 says TASKS when something
// becomes so): the TASKS is withheld, and RESUME says it.
func (e *Engine) flushTasks() {
	if !e.tasksDue {
		return
	}
	e.tasksDue = false
	if e.halted != nil {
		return
	}
	if e.paused {
		e.withheld = true
		return
	}
	var names []string
	for i := range e.pending.all() {
		if c := e.comps[i]; e.claimable(c) {
			names = append(names, c.name)
		}
	}
	if len(names) > 0 {
		e.say(protocol.Tasks(names, e.claimAgain...))
		e.claimAgain = nil
	}
}

func (e *Engine) unmergedDeps(c *component) []string {
	var out []string
	for _, d := range e.graph.Deps(c.idx) {
		if e.comps[d].state != Merged {
			out = append(out, e.comps[d].name)
		}
	}
	return out
}

func (e *Engine) ownedBy(agent string) []string {
	var out []string
	for _, c := range e.comps {
		if c.owner == agent && c.state != Merged {
			out = append(out, c.name)
		}
	}
	return out
}
