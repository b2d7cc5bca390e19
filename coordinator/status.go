package coordinator

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/agentforeman/foreman/protocol"
)

// status answers STATUS [c]: one line per component, saying where it is and
// why (contract section 3).
func (e *Engine) status(agent, name string) {
	if name != "" {
		if c, ok := e.lookup(agent, name); ok {
			e.say(e.statusLine(c))
		}
		return
	}
	for _, c := range e.comps {
		e.say(e.statusLine(c))
	}
}

func (e *Engine) statusLine(c *component) string {
	var f []protocol.Field
	add := func(k, v string) { f = append(f, protocol.Field{Key: k, Value: v}) }
	if c.owner != "" {
		add("owner", c.owner)
		add("since", short(e.now.Sub(c.since)))
	}
	if c.hasProgress && c.owner != "" {
		add("progress", strconv.Itoa(c.progress)+"%")
		add("progress_age", short(e.now.Sub(c.progressAt)))
	}
	if c.pr != "" && c.owner != "" {
		add("pr", c.pr)
	}
	if c.timer.armed() {
		add("next", timerWhat[c.timer.kind])
		if e.paused {
			add("in", "paused")
		} else {
			add("in", short(c.timer.at.Sub(e.now)))
		}
	}
	if c.owner != "" {
		add("audits", fmt.Sprintf("%d/%d", c.auditFails(c.owner), e.rules.AuditAttempts))
	}
	if e.rules.CIGating && (c.ciFails > 0 || c.ciConflict > 0 || c.state == InCI) {
		add("ci", fmt.Sprintf("%d/%d", c.ciFails, e.rules.CIAttempts))
		add("conflicts", fmt.Sprintf("%d/%d", c.ciConflict, e.rules.ConflictAttempts))
	}
	switch {
	case len(c.waits) > 0:
		var on []string
		for _, w := range c.waits {
			kind := "dep"
			if w.kind == waitFiles {
				kind = "files"
			}
			on = append(on, w.on.name+"("+kind+")")
		}
		add("waits", strings.Join(on, ","))
	case c.state == Pending && c.unmerged > 0:
		add("waits", strings.Join(e.unmergedDeps(c), ","))
	}
	if len(c.pushback) > 0 {
		add("pushback", e.pushbackCounts(c))
	}
	if len(c.barred) > 0 {
		add("barred", strings.Join(c.barred, ","))
	}
	if len(c.timedOut) > 0 && c.state != Merged {
		add("timed_out", strings.Join(c.timedOut, ","))
	}
	if esc := e.openEscalation(c); esc != "" {
		add("escalation", esc)
	}
	if c.approved {
		add("approved", "yes")
	}
	if c.mergedFrom != "" && c.state == Merged {
		add("built_by", c.mergedFrom)
	}
	if c.state == Pending && e.halted != nil {
		add("halted", "cycle")
	}
	if e.paused {
		add("paused", "yes")
	}
	return protocol.StatusLine(c.name, c.state.String(), f)
}

// openEscalation names the escalation about c still waiting for a human.
func (e *Engine) openEscalation(c *component) string {
	switch {
	case c.hold != "":
		return string(c.hold)
	case c.overdue:
		return string(protocol.AuditOverdue)
	}
	var disputes []string
	for agent, n := range c.disputes {
		if n == disputed {
			disputes = append(disputes, agent)
		}
	}
	if len(disputes) == 0 {
		return ""
	}
	sort.Strings(disputes)
	return string(protocol.ClaimDispute) + ":" + strings.Join(disputes, ",")
}

func (e *Engine) pushbackCounts(c *component) string {
	deps := make([]int, 0, len(c.pushback))
	for d := range c.pushback {
		deps = append(deps, d)
	}
	sort.Ints(deps)
	var parts []string
	for _, d := range deps {
		parts = append(parts, fmt.Sprintf("%s:%d/%d", e.comps[d].name, c.pushback[d], e.rules.PushbackRetries))
	}
	return strings.Join(parts, ",")
}
