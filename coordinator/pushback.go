package coordinator

import (
	"fmt"

	"github.com/agentforeman/foreman/protocol"
)

// needInfo handles BLOCKED c dep, the NEED_INFO pushback (contract section
// 5): c needs what dep produces.
func (e *Engine) needInfo(c *component, depName string) {
	agent := c.owner
	di, known := e.graph.Index(depName)
	if !known {
		e.holdFor(c, protocol.NeedInfo, fmt.Sprintf(
			"%s needs %s, which is not a component of the build (the decomposition missed it)", agent, depName),
			fmt.Sprintf("ADD %s then RESOLVE %s, or RELEASE %s", depName, c.name, c.name))
		return
	}
	dep := e.comps[di]
	if dep.state == Merged {
		e.checkin(c)
		e.resetPushback(c)
		e.say(protocol.Unblocked(c.name, agent)) // it exists already
		return
	}
	if path := e.graph.PathTo(di, c.idx); path != nil {
		cycle := e.graph.Format(append([]int{c.idx}, path...))
		e.holdFor(c, protocol.Cycle, fmt.Sprintf("BLOCKED %s %s would close a dependency cycle: %s", c.name, dep.name, cycle),
			fmt.Sprintf("UNDEPEND to break it, then RESOLVE %s", c.name))
		return
	}
	if c.pushback == nil {
		c.pushback = make(map[int]int)
	}
	if c.pushback[di] <= e.rules.PushbackRetries { // stops one past the limit
		c.pushback[di]++
	}
	if n := c.pushback[di]; n > e.rules.PushbackRetries {
		e.holdFor(c, protocol.NeedInfo, fmt.Sprintf(
			"%s blocked on %s %d times (retries %d/%d) while %s is %s; something may be missing",
			agent, dep.name, n, e.rules.PushbackRetries, e.rules.PushbackRetries, dep.name, dep.state),
			fmt.Sprintf("ADD it, UNDEPEND %s %s, or RESOLVE %s to reset the count", c.name, dep.name, c.name))
		return
	}
	if e.graph.AddEdge(c.idx, di) {
		c.unmerged++
	}
	e.startWaiting(c, dep, waitDependency)
	e.checkin(c)
	e.say(protocol.Wait(c.name, agent, dep.name))
}

// conflict handles CONFLICT c other files|interface, the CONFLICT pushback.
// Colliding on files waits for the other builder; colliding on an interface
// needs a human.
func (e *Engine) conflict(c *component, cmd protocol.Command) {
	agent := c.owner
	oi, known := e.graph.Index(cmd.Other)
	if !known {
		e.say(protocol.Reject(c.name, agent, e.unknown(cmd.Other)))
		return
	}
	other := e.comps[oi]
	if other == c {
		e.reject(c, agent, "a component cannot conflict with itself")
		return
	}
	if cmd.Kind == protocol.Interface {
		details := ""
		if cmd.Text != "" {
			details = " (" + cmd.Text + ")"
		}
		e.holdFor(c, protocol.InterfaceConflict, fmt.Sprintf("%s and %s disagree on an interface%s", c.name, other.name, details),
			fmt.Sprintf("decide which contract stands, then RESOLVE %s (or RELEASE %s)", c.name, c.name))
		return
	}
	// Waiting on a component that itself waits on c would deadlock them
	// both, so the later of the two goes on: the other is not in progress.
	if !other.inProgress() || waitsOnTransitively(other, c) {
		e.checkin(c)
		e.say(protocol.Unblocked(c.name, agent))
		return
	}
	e.startWaiting(c, other, waitFiles)
	e.checkin(c)
	e.say(protocol.Wait(c.name, agent, other.name))
}

// waitsOnTransitively reports whether a waits, directly or through others
// it waits on, for b.
func waitsOnTransitively(a, b *component) bool {
	seen := map[*component]bool{}
	var walk func(*component) bool
	walk = func(x *component) bool {
		if x == b {
			return true
		}
		if seen[x] {
			return false
		}
		seen[x] = true
		for _, w := range x.waits {
			if walk(w.on) {
				return true
			}
		}
		return false
	}
	return walk(a)
}

// startWaiting makes c blocked on o.
func (e *Engine) startWaiting(c, o *component, kind waitKind) {
	e.setState(c, Blocked)
	if c.waitsOn(o) {
		return
	}
	c.waits = append(c.waits, wait{on: o, kind: kind})
	o.waiters = append(o.waiters, c)
}

// stopWaiting drops everything c waits on (it was released, held, merged or
// went to review).
func (e *Engine) stopWaiting(c *component) {
	for _, w := range c.waits {
		w.on.waiters = removeComponent(w.on.waiters, c)
	}
	c.waits = nil
	if c.state == Blocked {
		e.setState(c, Building)
	}
}

// unblockWaiters runs when o is merged, or released (merged false): those
// waiting on o's files may go on, and on a merge those waiting on o as a
// dependency too. A component with nothing left to wait on is UNBLOCKED
// with a fresh check-in deadline.
func (e *Engine) unblockWaiters(o *component, merged bool) {
	waiters := append([]*component(nil), o.waiters...)
	for _, c := range waiters {
		for _, w := range c.waits {
			if w.on == o && (merged || w.kind == waitFiles) {
				e.stopWaitingOn(c, o)
				break
			}
		}
	}
}

// stopWaitingOn drops c's wait on o; with nothing left to wait on, c goes
// on (UNBLOCKED).
func (e *Engine) stopWaitingOn(c, o *component) {
	if !c.waitsOn(o) {
		return
	}
	c.waits = removeWait(c.waits, o)
	o.waiters = removeComponent(o.waiters, c)
	if len(c.waits) == 0 && c.state == Blocked {
		e.unblock(c)
	}
}

// unblock tells c's owner to go on.
func (e *Engine) unblock(c *component) {
	e.setState(c, Building)
	e.resetPushback(c)
	e.checkin(c)
	e.say(protocol.Unblocked(c.name, c.owner))
}

func (e *Engine) resetPushback(c *component) { c.pushback = nil }

func removeComponent(list []*component, c *component) []*component {
	for i, x := range list {
		if x == c {
			return append(list[:i:i], list[i+1:]...)
		}
	}
	return list
}

func removeWait(waits []wait, on *component) []wait {
	for i, w := range waits {
		if w.on == on {
			return append(waits[:i:i], waits[i+1:]...)
		}
	}
	return waits
}
