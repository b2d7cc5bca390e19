package coordinator

import (
	"fmt"
	"strings"

	"github.com/agentforeman/foreman/protocol"
)

// Work in progress, handoff and overlaps (contract section 10). They matter
// when a host (the CI role bound to a git repository) runs beside the bot:
// without one the lines are kept and shown, and change nothing else.
//
// Where the work is: the last ref named for c (a PROGRESS note's branch=,
// or READY's ref when it is one) is kept across builders, shown as STATUS
// c ... branch=<ref>, and named first in the context of the ACK that
// follows a departure (branch=<ref> after TIMEOUT of @a: ...). The host
// reads the same departures and pins the tip (protocol.HandoffLine).
//
// Overlaps: the host's OVERLAP c d files is recorded on both (STATUS ...
// overlaps=d) until one of them is merged. With rules.overlap wait it is
// also handled as c's builder's CONFLICT c d files would be: c waits for d
// (WAIT, then UNBLOCKED when d is merged or released). Two things differ,
// because the line is the host's and not the builder's: it is no check-in
// (a builder that went silent still times out), and when c would go on at
// once (d is not in progress, or d waits on c) it says nothing, since c's
// builder asked for nothing.

// keepBranch records a ref named for c. READY may name a PR URL, which is
// no ref: only a ref is kept. It is copied when it changes: the line it
// was read from may be a long message, which a kept substring would keep
// whole; the same branch named again costs nothing.
func (e *Engine) keepBranch(c *component, ref string) {
	if c.branch != ref && protocol.ValidRef(ref) {
		c.branch = strings.Clone(ref)
	}
}

// overlap handles OVERLAP c d files, from the CI role only.
func (e *Engine) overlap(agent string, cmd protocol.Command) {
	if !e.roles.ci[agent] {
		why := "only the CI role (foreman host) may say OVERLAP"
		if len(e.roles.ci) == 0 {
			why = "only the CI role may say OVERLAP, and none is configured (roles.ci)"
		}
		e.say(protocol.Reject(cmd.Component, agent, why))
		return
	}
	c, ok := e.lookup(agent, cmd.Component)
	if !ok {
		return
	}
	di, known := e.graph.Index(cmd.Other)
	if !known {
		e.say(protocol.Reject(c.name, agent, e.unknown(cmd.Other)))
		return
	}
	d := e.comps[di]
	switch {
	case d == c:
		e.reject(c, agent, "a component cannot overlap itself")
		return
	case c.state == Merged || d.state == Merged:
		return // landed work is the target's now: CI finds any conflict with it
	}
	addOverlap(c, d)
	addOverlap(d, c)
	if e.rules.Overlap != OverlapWait {
		return // the host's line is the warning both builders see
	}
	switch {
	case c.state != Building && c.state != Blocked: // nobody builds it, or it is past READY or held
	case c.waitsOn(d):
	case !d.inProgress(), waitsOnTransitively(d, c): // c goes on; its builder asked for nothing
	default:
		e.startWaiting(c, d, waitFiles)
		e.say(protocol.Wait(c.name, c.owner, d.name))
	}
}

func addOverlap(c, d *component) {
	for _, o := range c.overlaps {
		if o == d {
			return
		}
	}
	c.overlaps = append(c.overlaps, d)
}

// dropOverlaps forgets c's overlaps, on both sides: c is merged.
func dropOverlaps(c *component) {
	for _, o := range c.overlaps {
		o.overlaps = removeComponent(o.overlaps, c)
	}
	c.overlaps = nil
}

// handedOver is the ACK context's first word after a departure: where the
// last builder's work is (protocol.HandedBranch reads it).
func handedOver(t *trail) string {
	if t == nil || t.branch == "" {
		return ""
	}
	return fmt.Sprintf("%s%s", protocol.BranchKey, t.branch)
}
