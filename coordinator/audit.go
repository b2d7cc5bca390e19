package coordinator

import (
	"fmt"
	"strings"

	"github.com/agentforeman/foreman/protocol"
)

// ready handles READY c pr: the builder is done and a PR is open. With CI
// gating c waits for CI; otherwise it goes to review.
func (e *Engine) ready(c *component, pr string) {
	switch c.state {
	case InCI:
		e.reject(c, c.owner, "already waiting for CI on %s; wait for its verdict", c.pr)
		return
	case Review:
		e.reject(c, c.owner, "already in review (%s); wait for AUDIT", c.pr)
		return
	}
	c.pr = pr
	e.keepBranch(c, pr)
	e.stopWaiting(c)
	if e.rules.CIGating {
		e.setState(c, InCI)
		e.arm(c, ciTimer, e.rules.CITimeout)
		return
	}
	e.toReview(c)
}

// toReview sends c to its auditors.
func (e *Engine) toReview(c *component) {
	e.setState(c, Review)
	c.overdue, c.approved = false, false
	e.arm(c, auditTimer, e.rules.AuditTimeout)
	e.say(protocol.Review(c.name, c.owner, c.pr))
}

// audit handles AUDIT c PASS|FAIL from an auditor.
func (e *Engine) audit(agent string, cmd protocol.Command) {
	c, ok := e.lookup(agent, cmd.Component)
	if !ok {
		return
	}
	switch {
	case agent == c.owner:
		e.reject(c, agent, "you build %s; another agent must audit it", c.name)
	case !e.roles.mayAudit(agent, c):
		e.reject(c, agent, "only the configured auditors may AUDIT")
	case c.state != Review:
		e.reject(c, agent, "not in review (%s); AUDIT after REVIEW", c.state)
	case c.approved:
		e.reject(c, agent, "already approved; waiting for MERGED")
	case cmd.Verdict == protocol.Pass:
		e.approve(c, agent)
	default:
		e.auditFailed(c, cmd.Text)
	}
}

// approve handles AUDIT PASS: merge, or in merge mode external wait for
// someone to say MERGED.
func (e *Engine) approve(c *component, by string) {
	e.timers.stop(&c.timer)
	c.overdue = false
	if e.rules.Merge == MergeExternal {
		c.approved, c.approvedBy = true, by
		return
	}
	e.merge(c, true)
}

// auditFailed counts a failed audit for c's builder: FIX while attempts
// remain; then RETRY, and the builder is barred from c; when too many
// builders are barred, a human decides.
func (e *Engine) auditFailed(c *component, details string) {
	c.findings = details
	agent := c.owner
	n := c.addAuditFail(agent)
	if n < e.rules.AuditAttempts {
		if details == "" {
			details = "audit failed"
		}
		e.setState(c, Building)
		c.overdue = false
		e.checkin(c)
		e.say(protocol.Fix(c.name, agent, n, e.rules.AuditAttempts, details))
		return
	}
	e.say(protocol.Retry(c.name, agent))
	c.left = e.trailOf(c, "RETRY", "")
	c.barred = append(c.barred, agent)
	if len(c.barred) < e.rules.MaxBuilders {
		e.release(c)
		return
	}
	e.clearOwner(c)
	e.holdFor(c, protocol.AuditExhausted, fmt.Sprintf(
		"%s each failed %d/%d audits (retries %d/%d); last findings: %s",
		strings.Join(c.barred, ", "), e.rules.AuditAttempts, e.rules.AuditAttempts, len(c.barred), e.rules.MaxBuilders,
		orNone(c.findings)), fmt.Sprintf("RESOLVE %s to clear the bars, or ASSIGN %s @agent", c.name, c.name))
	e.unblockWaiters(c, false)
}

// auditOverdue fires when no verdict came within audit_timeout of REVIEW.
// It escalates once per review; c stays in review.
func (e *Engine) auditOverdue(c *component) {
	if c.overdue {
		return
	}
	c.overdue = true
	who := "any agent but the builder"
	if len(e.cfg.Roles.Auditors) > 0 {
		who = strings.Join(e.cfg.Roles.Auditors, ", ")
	}
	e.say(protocol.Escalate(c.name, protocol.AuditOverdue, fmt.Sprintf(
		"no AUDIT verdict %s after REVIEW of %s by %s; auditors: %s", short(e.rules.AuditTimeout), c.pr, c.owner, who),
		fmt.Sprintf("AUDIT %s PASS|FAIL, or RELEASE %s", c.name, c.name)))
}

func orNone(s string) string {
	if s == "" {
		return "none given"
	}
	return s
}
