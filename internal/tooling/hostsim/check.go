package hostsim

import (
	"strings"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/protocol"
)

// checker holds what the room said that the promise is about, from a
// watcher's seat, and checks the promise after every step.
type checker struct {
	w *world

	lastPass  map[string]string          // component -> the builder's commit of the host's last CI PASS of it
	reviewTip map[string]string          // component -> the commit its last REVIEW was about
	reviewRef map[string]string          // component -> the ref its last REVIEW named
	approved  map[string]map[string]bool // component -> the commits foreman approved it at
	merged    map[string]bool
}

func newChecker(w *world) *checker {
	return &checker{w: w, lastPass: map[string]string{}, reviewTip: map[string]string{}, reviewRef: map[string]string{},
		approved: map[string]map[string]bool{}, merged: map[string]bool{}}
}

// heard is a message of the room: the host's verdicts, foreman's REVIEW
// and MERGED and COMPLETE.
func (c *checker) heard(m agentchat.Message) {
	for line := range protocol.Lines(m.Content) {
		line = strings.TrimSpace(line)
		f := strings.Fields(line)
		switch {
		case m.From == c.w.host.id && len(f) >= 4 && f[0] == "CI" && f[2] == "PASS":
			if mc := c.w.repo.commits[f[3]]; mc != nil && len(mc.parents) == 2 {
				c.lastPass[f[1]] = mc.parents[1]
			}
		case m.From == c.w.foreman && len(f) >= 4 && f[0] == "REVIEW":
			c.reviewTip[f[1]], c.reviewRef[f[1]] = c.lastPass[f[1]], f[3]
		case m.From == c.w.host.id && len(f) == 2 && f[0] == "MERGED":
			c.hostMerged(f[1])
		case m.From == c.w.foreman && len(f) >= 1 && f[0] == "COMPLETE":
			c.w.complete = true
		case m.From == c.w.foreman && (len(f) == 2 && f[0] == "MERGED" || len(f) == 3 && f[0] == "OK" && f[1] == "MERGED"):
			c.merged[f[len(f)-1]] = true
		}
		if m.From == c.w.host.id || m.From == c.w.foreman {
			c.w.trace("%s: %s", map[bool]string{true: "host", false: "foreman"}[m.From == c.w.host.id], line)
		}
	}
}

// hostMerged: the host says MERGED c only once c's approved work is on
// main.
func (c *checker) hostMerged(comp string) {
	main := c.w.repo.refs["main"]
	for tip := range c.approved[comp] {
		if c.w.repo.isAncestor(tip, main) {
			return
		}
	}
	c.w.fail("the host said MERGED %s, and main holds no approved commit of it", comp)
}

// step checks the promise after a step: first, what foreman has approved
// now (an AUDIT PASS it took, of the commit the REVIEW was about), then
// where main points, then main's first-parent line since the start: each
// commit the host's landing put there, approved, on a tree that passed
// the checks, its own or, landed in a batch, its batch's head's, above it
// on that line.
func (c *checker) step() {
	for _, v := range c.w.bot.Node().Engine().View().Components {
		if v.Approved {
			if tip := c.reviewTip[v.Name]; tip != "" {
				if c.approved[v.Name] == nil {
					c.approved[v.Name] = map[string]bool{}
				}
				c.approved[v.Name][tip] = true
			}
		}
	}
	r := c.w.repo
	// A batch lands by one compare-and-swap to its head: main never holds
	// one of its other commits, whose trees no check passed, alone.
	if l, ok := r.landed[r.refs["main"]]; ok && l.head != "" && l.head != r.refs["main"] {
		c.w.fail("main points at %s (%s), a commit of the batch whose head is %s: main never holds a batch's commit but its head",
			short(r.refs["main"]), l.component, short(l.head))
		return
	}
	tips, comps := map[string]string{}, map[string]string{}
	above := map[string]bool{} // main's first-parent commits down to this one
	for id := r.refs["main"]; id != ""; {
		cm := r.commits[id]
		if len(cm.parents) == 0 {
			break // the root: where the build started
		}
		above[id] = true
		next := cm.parents[0]
		if r.byHand[id] {
			id = next
			continue
		}
		l, ok := r.landed[id]
		switch {
		case !ok:
			c.w.fail("main holds %s, which no landing of the host's put there", short(id))
		case l.head != "" && c.w.host.cfg.Batch == 1:
			c.w.fail("main holds %s (%s), which landed in a batch (head %s) with host.batch.max 1: its own tree was never checked",
				short(id), l.component, short(l.head))
		case l.head == "" && !r.passed[cm.tree]:
			c.w.fail("main holds %s (%s), whose tree %s no run of the checks passed", short(id), l.component, short(cm.tree))
		case l.head != "" && !above[l.head]:
			c.w.fail("main holds %s (%s), which landed in the batch whose head %s is not on main's first-parent line above it: no check passed on a tree holding it",
				short(id), l.component, short(l.head))
		case l.head != "" && !r.passed[r.commits[l.head].tree]:
			c.w.fail("main holds %s (%s), which landed in the batch whose head %s has a tree %s no run of the checks passed",
				short(id), l.component, short(l.head), short(r.commits[l.head].tree))
		case len(cm.parents) != 2 || !c.approved[l.component][cm.parents[1]]:
			c.w.fail("main holds %s, which lands %s's %s: never approved (approved: %v)", short(id), l.component, short(cm.parents[len(cm.parents)-1]), c.approved[l.component])
		case tips[cm.parents[1]] != "":
			c.w.fail("main holds %s and %s, which both land %s", short(id), short(tips[cm.parents[1]]), short(cm.parents[1]))
		case comps[l.component] != "":
			c.w.fail("main holds %s and %s, which both land %s", short(id), short(comps[l.component]), l.component)
		}
		if c.w.violation != nil {
			return
		}
		tips[cm.parents[1]], comps[l.component] = id, id
		id = next
	}
}
