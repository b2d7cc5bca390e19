package coordinator

import (
	"fmt"
	"strings"

	"github.com/agentforeman/foreman/protocol"
)

// ciFailure is which of CI's two limits a failure counts against.
type ciFailure uint8

const (
	checksFailed  ciFailure = iota // CI FAIL, or no verdict within ci_timeout
	mergeConflict                  // CI CONFLICT
)

// ciVerdict handles CI c PASS|FAIL|CONFLICT from the CI role (contract
// section 5, CI gating), and from the merger about an approved component
// (section 7).
func (e *Engine) ciVerdict(agent string, cmd protocol.Command) {
	c, ok := e.lookup(agent, cmd.Component)
	if !ok {
		return
	}
	if c.approved {
		e.mergerVerdict(agent, c, cmd)
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
		if what, ok := hostFault(cmd.Text); ok {
			e.heldForHost(c, what)
			return
		}
		e.ciFailed(c, checksFailed, cmd.Text)
	}
}

// hostFault reads a CI FAIL whose details' first word is host-fault: the
// CI role could not run c's checks for a reason of its own, such as a
// check program missing or not executable or the sandbox failing
// (contract section 6), as ABORT's reason may start with a hard blocker's
// type. The rest says what happened and what fixes it.
func hostFault(details string) (string, bool) {
	word, rest, _ := strings.Cut(strings.TrimSpace(details), " ")
	if strings.TrimSuffix(word, ":") != string(protocol.HostFault) {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// heldForHost holds c for the operator: its checks could not run, which
// is nobody's failure but the host's, so nothing is charged to the
// builder (no CI attempt counted) and its owner keeps it.
func (e *Engine) heldForHost(c *component, what string) {
	if what == "" {
		what = "the host could not run the checks"
	}
	// The host's text says what fixes it; the suggestion keeps to what
	// fits beside it.
	e.holdFor(c, protocol.HostFault, what,
		fmt.Sprintf("nothing counted against %s; fix it as said, then RESOLVE %s", c.owner, c.name))
}

// mergerVerdict handles CI about an approved component (merge mode
// external; only then is anything approved): the merger found that what
// would land no longer passes, or no longer merges, because the target
// moved. That steps c back to its builder as a CI failure does, whether or
// not CI gating is on. Nobody else may say it, and PASS says nothing new.
func (e *Engine) mergerVerdict(agent string, c *component, cmd protocol.Command) {
	switch {
	case !e.roles.merger[agent]:
		e.reject(c, agent, "already approved; only the merger may report CI on it now, or say MERGED")
	case cmd.Verdict == protocol.Pass:
		e.reject(c, agent, "already approved; say MERGED %s once it has landed", c.name)
	case cmd.Verdict == protocol.MergeConflict:
		c.approved = false
		e.ciFailed(c, mergeConflict, cmd.Text)
	default:
		c.approved = false
		if what, ok := hostFault(cmd.Text); ok {
			e.heldForHost(c, what)
			return
		}
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
	advice := fmt.Sprintf("fix CI or the branch, then RESOLVE %s, or RELEASE %s", c.name, c.name)
	if kind == checksFailed {
		// A fix to the checks lands as any change does, through the host.
		advice = fmt.Sprintf("fix the branch, or land a fix to the checks (ADD hotfix, ASSIGN hotfix @you, READY hotfix <branch>), then RESOLVE %s; or RELEASE %s", c.name, c.name)
	}
	e.holdFor(c, protocol.CIExhausted, fmt.Sprintf("%s (%d/%d) on %s by %s", text, *n, max, c.pr, c.owner), advice)
}
