package coordinator

import "github.com/agentforeman/foreman/protocol"

// merge marks c merged (contract section 7): MERGED when the bot merged it
// (say), then UNBLOCKED for each component waiting on c, then TASKS if any
// became claimable, then COMPLETE when every component is merged.
func (e *Engine) merge(c *component, say bool) {
	if c.owner != "" {
		c.mergedFrom = c.owner
	}
	e.clearOwner(c)
	e.setState(c, Merged)
	c.hold = ""
	c.overdue, c.approved = false, false
	c.disputes = nil // nobody disputes a merged component: no escalation of it is open
	e.merged++
	if say {
		e.say(protocol.MergedLine(c.name))
	}
	e.unblockWaiters(c, true)
	opened := false
	for _, u := range e.graph.Users(c.idx) {
		user := e.comps[u]
		user.unmerged--
		opened = opened || e.claimable(user)
	}
	if opened {
		e.announceTasks()
	}
	if e.merged == len(e.comps) && !e.complete {
		e.complete = true
		e.timers.stop(&e.overtime)
		e.say(protocol.Complete(e.cfg.Build))
	}
}
