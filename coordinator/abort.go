package coordinator

import (
	"fmt"
	"strings"

	"github.com/agentforeman/foreman/protocol"
)

// blockerTypes classifies the first word of an ABORT reason (the blocker
// taxonomy of the seeds). Hard blockers need a human: continuing
// automatically would waste work. Every other reason, listed here or not, is
// a soft handoff another builder can pick up.
var blockerTypes = map[string]bool{
	// hard: a human must review
	"mathematically_false":     true,
	"missing_dependency":       true,
	"unresolvable_build_error": true,
	"invalid_specification":    true,
	"resource_exhausted":       true,
	"strategy_failed":          true,
	// soft: another builder may continue
	"timeout":                    false,
	"context_exhaustion_handoff": false,
	"phase_incomplete":           false,
	"mcp_transient":              false,
}

// classifyAbort splits a reason into its blocker type and the rest, and
// says whether the type is hard. The type is matched ignoring case and
// trailing punctuation ("missing_dependency: libfoo").
func classifyAbort(reason string) (kind, rest string, hard bool) {
	word, rest, _ := strings.Cut(reason, " ")
	kind = strings.ToLower(strings.TrimRight(word, ":,;.-"))
	return kind, strings.TrimSpace(rest), blockerTypes[kind]
}

// abort handles ABORT c reason from c's owner. A hard blocker holds c (its
// owner let go) and escalates; anything else makes c pending again with no
// penalty for the builder.
func (e *Engine) abort(c *component, reason string) {
	agent := c.owner
	kind, rest, hard := classifyAbort(reason)
	c.left = e.trailOf(c, "ABORT", reason)
	if !hard && c.state != Held {
		e.release(c)
		return
	}
	e.clearOwner(c)
	if hard {
		text := kind + ":"
		if rest != "" {
			text += " " + rest
		}
		e.holdFor(c, protocol.HardBlocker, fmt.Sprintf("%s (from %s, who let %s go)", text, agent, c.name),
			fmt.Sprintf("decide, then RESOLVE %s to reopen it or ASSIGN %s @agent", c.name, c.name))
	} else {
		e.say(protocol.Escalate(c.name, c.hold, fmt.Sprintf("%s gave up %s while it was held (%s)", agent, c.name, reason),
			fmt.Sprintf("RESOLVE %s to reopen it, or ASSIGN %s @agent", c.name, c.name)))
	}
	e.unblockWaiters(c, false)
}
