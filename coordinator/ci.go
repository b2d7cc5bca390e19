package coordinator

import (
	"fmt"

	"github.com/agentforeman/foreman/protocol"
)

// ciFailure is which of CI's two limits a failure counts against.
type ciFailure uint8

const (
	checksFailed  ciFailure = iota // CI FAIL, or no verdict within ci_timeout
	mergeConflict                  // CI CONFLICT
)

// ciVerdict handles CI c PASS|FAIL|CONFLICT from the CI role (contract
// section 5, CI gating).
func (e *Engine) ciVerdict(agent string, cmd protocol.Command) {
	c, ok := e.lookup(agent, cmd.Component)
	if !ok {
		return
	}
	switch {
	case !e.rules.CIGating:
		e.reject(c, agent, "CI gating is off; READY goes straight to review")
	case agent == c.owner:
		e.reject(c, agent, "you build %s; the CI role reports its checks", c.name)
	case !e.roles.mayReportCI(agent, c):
		e.reject(c, agent, "only the configured CI role may report CI")
	case c.state != InCI:
		e.reject(c, agent, "not waiting for CI (%s)", c.state)
	case cmd.Verdict == protocol.Pass:
		e.timers.stop(&c.timer)
		e.toReview(c)
	case cmd.Verdict == protocol.MergeConflict:
		e.ciFailed(c, mergeConflict, cmd.Text)
	default:
		e.ciFailed(c, checksFailed, cmd.Text)
	}
}

// ciTimedOut fires when CI gave no verdict within ci_timeout: that counts
// as a CI failure.
func (e *Engine) ciTimedOut(c *component) {
	e.ciFailed(c, checksFailed, fmt.Sprintf("no CI verdict within %s", short(e.rules.CITimeout)))
}

// ciFailed steps c back to its builder while attempts remain, and holds it
// for a human when they are used up.
func (e *Engine) ciFailed(c *component, kind ciFailure, details string) {
	n, max, what := &c.ciFails, e.rules.CIAttempts, "CI failed"
	if kind == mergeConflict {
		n, max, what = &c.ciConflict, e.rules.ConflictAttempts, "merge conflict"
	}
	if *n < max { // at the limit already when an ASSIGN ended the hold
		*n++
	}
	text := what
	if details != "" {
		text += ": " + details
	}
	if *n < max {
		e.setState(c, Building)
		e.checkin(c)
		e.say(protocol.Fix(c.name, c.owner, *n, max, text))
		return
	}
	e.holdFor(c, protocol.CIExhausted, fmt.Sprintf("%s (%d/%d) on %s by %s", text, *n, max, c.pr, c.owner),
		fmt.Sprintf("fix CI or the branch, then RESOLVE %s, or RELEASE %s", c.name, c.name))
}
