package coordinator

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// holdFor freezes c for a human decision and says why (contract section 4):
// no timers, no claims, no waiting, until an operator's RESOLVE, RELEASE,
// ASSIGN or MERGED. c keeps its owner, if it has one.
func (e *Engine) holdFor(c *component, code protocol.Escalation, what, suggestion string) {
	e.setState(c, Held)
	c.hold = code
	c.overdue = false
	c.approved = false // a hold is a decision to make: an approval before it no longer stands
	e.timers.stop(&c.timer)
	e.stopWaiting(c)
	e.say(protocol.Escalate(c.name, code, what, suggestion))
}

// halt stops the build on a dependency cycle: every claim is refused and no
// TASKS is said until the graph is acyclic again.
func (e *Engine) halt(cycle []int) {
	e.halted = cycle
	path := e.graph.Format(cycle)
	e.say(protocol.Error(protocol.BuildSubject, "dependency cycle: "+path))
	e.say(protocol.Escalate(protocol.BuildSubject, protocol.Cycle, path+"; the build is halted", fmt.Sprintf(
		"UNDEPEND %s %s (or fix the spec and reload) to go on", e.graph.Name(cycle[0]), e.graph.Name(cycle[1]))))
}

// recheckCycle runs after the graph lost an edge: a halted build resumes
// once the graph is acyclic, or reports the cycle that is left.
func (e *Engine) recheckCycle() {
	if e.halted == nil {
		return
	}
	cycle := e.graph.Cycle()
	if cycle == nil {
		e.halted = nil
		e.announceTasks()
		return
	}
	if e.graph.Format(cycle) != e.graph.Format(e.halted) {
		e.halt(cycle)
	}
}

// overtimeFired escalates, once, a build that runs past max_build_time.
// Work goes on.
func (e *Engine) overtimeFired() {
	if e.overtimeSaid || e.complete {
		return
	}
	e.overtimeSaid = true
	var busy []string
	for _, c := range e.comps {
		if c.inProgress() {
			busy = append(busy, c.name+"("+c.owner+")")
		}
	}
	text := fmt.Sprintf("%s since start, %d/%d merged", short(e.rules.MaxBuildTime), e.merged, len(e.comps))
	if len(busy) > 0 {
		text += "; in progress: " + strings.Join(busy, " ")
	}
	e.say(protocol.Escalate(protocol.BuildSubject, protocol.Overtime, text+"; work goes on", "STATUS shows what is stuck, PAUSE stops assigning"))
}

// short formats a duration without trailing zero units: 10m, 1h30m, 45s.
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
