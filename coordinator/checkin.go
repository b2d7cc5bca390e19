package coordinator

import (
	"fmt"

	"github.com/agentforeman/foreman/protocol"
)

// disputeLines is how many builder lines about c an agent that does not own
// it may send before it is a claim dispute (contract section 5).
const disputeLines = 3

// builderLine handles PROGRESS, BLOCKED, CONFLICT, READY and ABORT. Only c's
// owner may say them, and each but ABORT is a check-in.
func (e *Engine) builderLine(agent string, cmd protocol.Command) {
	c, ok := e.lookup(agent, cmd.Component)
	if !ok {
		return
	}
	if c.owner != agent {
		e.notOwner(agent, c)
		return
	}
	switch {
	case c.state == Held && cmd.Verb != protocol.Abort:
		e.reject(c, agent, "held for a human (%s); an operator must RESOLVE, RELEASE or ASSIGN it", c.hold)
		return
	case (c.state == Review || c.state == InCI) && (cmd.Verb == protocol.Blocked || cmd.Verb == protocol.Conflict):
		e.reject(c, agent, "in %s with %s; pushback comes before READY (ABORT to give it up)", c.state, c.pr)
		return
	}
	switch cmd.Verb {
	case protocol.Progress:
		e.progress(c, cmd)
	case protocol.Blocked:
		e.needInfo(c, cmd.Dep)
	case protocol.Conflict:
		e.conflict(c, cmd)
	case protocol.Ready:
		e.ready(c, cmd.PR)
	case protocol.Abort:
		e.abort(c, cmd.Text)
	}
}

// notOwner refuses a builder line from someone who does not own c, saying
// why, and counts it toward a claim dispute: the third such line from one
// agent about one component is escalated, once.
func (e *Engine) notOwner(agent string, c *component) {
	switch {
	case c.state == Merged:
		e.reject(c, agent, "already merged; nothing more to report")
		return // nobody disputes a merged component
	case contains(c.timedOut, agent):
		e.reject(c, agent, "timed out; CLAIM again")
	case c.isBarred(agent):
		e.reject(c, agent, "you used all %d audit attempts on %s; CLAIM another component", e.rules.AuditAttempts, c.name)
	case c.owner == "":
		e.reject(c, agent, "not yours; CLAIM %s first", c.name)
	default:
		e.reject(c, agent, "owned by %s, not you; CLAIM another component from TASKS", c.owner)
	}
	if c.disputes == nil {
		c.disputes = make(map[string]int)
	}
	if c.disputes[agent] == disputed {
		return
	}
	if c.disputes[agent]++; c.disputes[agent] < disputeLines {
		return
	}
	c.disputes[agent] = disputed
	owner := c.owner
	if owner == "" {
		owner = "nobody"
	}
	e.say(protocol.Escalate(c.name, protocol.ClaimDispute, fmt.Sprintf(
		"%s sent %d builder lines about %s, which %s owns", agent, disputeLines, c.name, owner),
		fmt.Sprintf("ASSIGN %s %s if it should have it, or tell it to stop", c.name, agent)))
}

// checkin restarts c's check-in deadline while it is being built.
func (e *Engine) checkin(c *component) {
	if c.state == Building || c.state == Blocked {
		e.arm(c, checkinTimer, e.checkinDeadline())
	}
}

// progress records a PROGRESS heartbeat, and the branch its note names.
func (e *Engine) progress(c *component, cmd protocol.Command) {
	c.progress, c.hasProgress, c.progressAt = cmd.Percent, true, e.base()
	if cmd.Branch != "" {
		e.keepBranch(c, cmd.Branch)
	}
	e.checkin(c)
}

// checkinMissed fires when c's owner has missed every check-in allowed:
// TIMEOUT, and c is claimable again (the timed-out agent too, by CLAIM).
func (e *Engine) checkinMissed(c *component) {
	agent := c.owner
	e.say(protocol.Timeout(c.name, agent))
	c.left = e.trailOf(c, "TIMEOUT", "")
	if !contains(c.timedOut, agent) {
		c.timedOut = append(c.timedOut, agent)
	}
	e.release(c)
}
