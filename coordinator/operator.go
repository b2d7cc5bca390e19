package coordinator

import (
	"fmt"

	"github.com/agentforeman/foreman/protocol"
)

// operator handles the operator commands (contract section 5). Each is
// refused with REJECT (or ERROR when it names no component) if it cannot
// apply, and otherwise confirmed with OK before its consequences.
func (e *Engine) operator(agent string, cmd protocol.Command) {
	if !e.roles.mayCommand(agent, cmd.Verb) {
		who := "operators"
		if cmd.Verb == protocol.Merged {
			who = "operators and the merger"
		}
		if cmd.Component == "" {
			e.say(protocol.Error(agent, fmt.Sprintf("only %s may %s; ask one of them", who, cmd.Verb)))
		} else {
			e.say(protocol.Reject(cmd.Component, agent, fmt.Sprintf("only %s may %s; ask one of them", who, cmd.Verb)))
		}
		return
	}
	switch cmd.Verb {
	case protocol.Pause:
		e.pause(agent, cmd)
		return
	case protocol.Resume:
		e.resume(agent, cmd)
		return
	case protocol.Add:
		e.add(agent, cmd)
		return
	case protocol.Budget:
		e.budgetCommand(agent, cmd)
		return
	}
	c, ok := e.lookup(agent, cmd.Component)
	if !ok {
		return
	}
	switch cmd.Verb {
	case protocol.Assign:
		e.assignCommand(agent, c, cmd)
	case protocol.Release:
		e.releaseCommand(agent, c, cmd)
	case protocol.Resolve:
		e.resolve(agent, c, cmd)
	case protocol.Override:
		e.override(agent, c, cmd)
	case protocol.Merged:
		e.mergedCommand(agent, c, cmd)
	case protocol.Depend:
		e.depend(agent, c, cmd)
	case protocol.Undepend:
		e.undepend(agent, c, cmd)
	}
}

func (e *Engine) ok(cmd protocol.Command) { e.say(protocol.OK(cmd)) }

// assignCommand: ASSIGN c @a forces c onto @a, in any state but merged. The
// previous owner loses c, @a's bar on c is lifted and any hold ends.
func (e *Engine) assignCommand(agent string, c *component, cmd protocol.Command) {
	if c.state == Merged {
		e.reject(c, agent, "already merged; nothing to assign")
		return
	}
	if !e.knows(cmd.Agent) {
		e.reject(c, agent, "%s", e.unknownAgent(cmd.Agent))
		return
	}
	e.ok(cmd)
	e.assign(c, cmd.Agent)
}

// releaseCommand: RELEASE c takes c from its builder and ends any hold; c
// is pending again.
func (e *Engine) releaseCommand(agent string, c *component, cmd protocol.Command) {
	switch {
	case c.state == Merged:
		e.reject(c, agent, "already merged; nothing to release")
		return
	case c.owner == "" && c.state != Held:
		e.reject(c, agent, "nobody owns it and it is not held; nothing to release")
		return
	}
	e.say(protocol.Released(cmd, c.owner)) // the old owner hears it is to stop
	if c.owner != "" {
		c.left = e.trailOf(c, "RELEASE", "")
	}
	c.disputes = nil // the operator has decided who builds c
	e.release(c)
}

// resolve: RESOLVE c ends a hold and resets c's counters (audit failures,
// bars, pushback, CI). With an owner c is built again, with a fresh
// deadline; without one it is pending.
func (e *Engine) resolve(agent string, c *component, cmd protocol.Command) {
	if c.state != Held {
		e.reject(c, agent, "not held (%s); RESOLVE ends a hold", c.state)
		return
	}
	e.ok(cmd)
	c.hold = ""
	c.fails, c.barred, c.pushback = nil, nil, nil
	c.ciFails, c.ciConflict = 0, 0
	if e.budgetHolds(c) { // only a BUDGET gives it more to spend
		e.holdForBudget(c, "RESOLVE, but still over budget: "+e.budgetFigures(c), e.budgetSubject(c), e.budgetSpent(c), e.limit(e.budgetSubject(c)))
		return
	}
	if c.owner == "" {
		e.setState(c, Pending)
		if e.claimable(c) {
			e.announceTasks()
		}
		return
	}
	owner := c.owner
	e.setState(c, Building)
	e.checkin(c)
	context := "resolved by " + agent
	if cmd.Text != "" {
		context += ": " + cmd.Text
	}
	e.say(protocol.Ack(c.name, owner, context))
}

// override: OVERRIDE c lets a blocked component go on despite its pushback:
// the dependency edges it waited on are dropped.
func (e *Engine) override(agent string, c *component, cmd protocol.Command) {
	if c.state != Blocked {
		e.reject(c, agent, "not blocked (%s); OVERRIDE lets a blocked component go on", c.state)
		return
	}
	e.ok(cmd)
	for _, w := range c.waits {
		if w.kind == waitDependency {
			e.removeEdge(c, w.on)
		}
	}
	e.stopWaiting(c)
	e.unblock(c)
}

// mergedCommand: MERGED c from an operator or the merger marks c merged,
// whatever its state (required in merge mode external).
func (e *Engine) mergedCommand(agent string, c *component, cmd protocol.Command) {
	if c.state == Merged {
		e.reject(c, agent, "already merged")
		return
	}
	e.ok(cmd)
	e.merge(c, false)
}

// depend: DEPEND c dep adds an edge, unless it would close a cycle.
func (e *Engine) depend(agent string, c *component, cmd protocol.Command) {
	dep, ok := e.lookup(agent, cmd.Dep)
	if !ok {
		return
	}
	switch {
	case dep == c:
		e.reject(c, agent, "a component cannot depend on itself")
		return
	case e.graph.HasEdge(c.idx, dep.idx):
		e.reject(c, agent, "already depends on %s", dep.name)
		return
	}
	if path := e.graph.PathTo(dep.idx, c.idx); path != nil {
		e.reject(c, agent, "DEPEND %s %s would close a cycle: %s", c.name, dep.name,
			e.graph.Format(append([]int{c.idx}, path...)))
		return
	}
	e.ok(cmd)
	e.graph.AddEdge(c.idx, dep.idx)
	if dep.state != Merged {
		c.unmerged++
	}
}

// undepend: UNDEPEND c dep drops an edge. c stops waiting on dep, a halted
// build may resume, and c may become claimable.
func (e *Engine) undepend(agent string, c *component, cmd protocol.Command) {
	dep, ok := e.lookup(agent, cmd.Dep)
	if !ok {
		return
	}
	if !e.graph.HasEdge(c.idx, dep.idx) {
		e.reject(c, agent, "does not depend on %s", dep.name)
		return
	}
	e.ok(cmd)
	e.removeEdge(c, dep)
	e.stopWaitingOn(c, dep)
	if e.halted != nil {
		e.recheckCycle()
		return
	}
	if e.claimable(c) {
		e.announceTasks()
	}
}

// add: ADD c [dep...] appends a component the decomposition missed.
func (e *Engine) add(agent string, cmd protocol.Command) {
	if _, exists := e.graph.Index(cmd.Component); exists {
		e.say(protocol.Reject(cmd.Component, agent, "already a component; DEPEND adds dependencies to it"))
		return
	}
	var deps []*component
	for _, name := range cmd.Deps {
		if name == cmd.Component {
			e.say(protocol.Reject(cmd.Component, agent, "a component cannot depend on itself"))
			return
		}
		i, ok := e.graph.Index(name)
		if !ok {
			e.say(protocol.Reject(cmd.Component, agent, e.unknown(name)))
			return
		}
		deps = append(deps, e.comps[i])
	}
	e.ok(cmd)
	c, _ := e.addComponent(cmd.Component) // a valid, new name: checked above
	for _, d := range deps {
		if e.graph.AddEdge(c.idx, d.idx) && d.state != Merged {
			c.unmerged++
		}
	}
	if e.complete { // the build has more to do after all
		e.complete = false
		if e.rules.MaxBuildTime > 0 && !e.overtimeSaid {
			e.timers.arm(&e.overtime, overtimeTimer, e.startAt.Add(e.rules.MaxBuildTime))
		}
	}
	if e.claimable(c) {
		e.announceTasks()
	}
}

// pause stops assigning and every timer until RESUME.
func (e *Engine) pause(agent string, cmd protocol.Command) {
	if e.paused {
		e.say(protocol.Error(agent, "the build is already paused; RESUME restarts it"))
		return
	}
	e.ok(cmd)
	e.freeze(&e.paused)
}

// resume restarts assigning and timers; every deadline moves later by the
// length of the pause.
func (e *Engine) resume(agent string, cmd protocol.Command) {
	if !e.paused {
		e.say(protocol.Error(agent, "the build is not paused; PAUSE stops it"))
		return
	}
	e.ok(cmd)
	e.thaw(&e.paused)
	if e.withheld { // what became claimable during the pause is, now
		e.withheld = false
		e.announceTasks()
	}
}

// removeEdge drops c -> dep, keeping c's count of unmerged dependencies.
func (e *Engine) removeEdge(c, dep *component) {
	if e.graph.RemoveEdge(c.idx, dep.idx) && dep.state != Merged {
		c.unmerged--
	}
}
