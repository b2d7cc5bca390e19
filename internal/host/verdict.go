package host

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// Verdict is a finished job as the queue view shows it.
type Verdict struct {
	At        time.Time `json:"at"`
	Run       int       `json:"run"`
	Kind      string    `json:"kind"`
	Component string    `json:"c"`
	Result    string    `json:"result"`
	Commit    string    `json:"commit,omitempty"`
	Line      string    `json:"line,omitempty"`
	Log       string    `json:"log,omitempty"`
	URL       string    `json:"url,omitempty"`
	Receipt   string    `json:"receipt,omitempty"` // landed: the receipt's copy in host.logs (its note is on Commit)
}

const keepRecent = 20

// verdict says what a current job found: CI c PASS|FAIL|CONFLICT for a
// check; for a landing, MERGED c, or CI c FAIL|CONFLICT when what would
// land no longer passes (contract section 7). A pass is made durable
// before it is said, and so is a landing.
func (h *Core) verdict(c *comp, r *run, o Outcome) {
	h.record(Record{Op: OpEnd, Run: r.Run, Component: c.name, Result: o.Result.String(), Commit: o.Commit})
	h.report(c, r, o)
}

// report says a verdict whose run's end is recorded already.
func (h *Core) report(c *comp, r *run, o Outcome) {
	if o.Rebased != nil && r.Kind == Check {
		h.say(fmt.Sprintf("%s%s: rebased %s onto %s (%s -> %s); fetch it before you go on",
			mention(r.Owner), c.name, o.Rebased.Branch, h.cfg.Target, short(o.Rebased.From), short(o.Rebased.To)))
	}
	// Until foreman answers, an older view of c (a STATUS said before the
	// verdict reached it) must not start c's job again.
	c.phase = reported
	var line string
	switch o.Result {
	case Passed:
		if !o.Reused {
			h.passedTree(r, o) // a tree reused is on record as it passed
		}
		p := Pass{Component: c.name, Owner: r.Owner, Ref: r.Ref, Tip: o.Tip, Commit: o.Commit, Base: o.Base, Tree: o.Tree}
		h.passes[c.name] = p
		delete(h.approvals, c.name) // back through CI: what was approved before is not what it is now
		h.record(Record{Op: OpPass, Component: c.name, Pass: &p})
		line = "CI " + c.name + " PASS " + o.Commit + flakyNote(o.Flaky)
		switch {
		case o.In != "" && r.Kind == Check:
			line += " (" + o.Line + ")"
		case o.Reused && r.Kind == Check:
			line += " (its tree passed before: not checked again)"
		}
	case Failed:
		line = "CI " + c.name + " FAIL " + failDetails(o)
		if why, ok := h.hostFault(c, o); ok {
			line = hostFaultLine(c, why)
		}
	case Conflicted:
		line = "CI " + c.name + " CONFLICT " + files(o.Files)
	case Invalid:
		line = "CI " + c.name + " FAIL " + bound(o.Line, detailRoom)
	case Stale:
		line = "CI " + c.name + " FAIL " + bound(h.movedAfterApproval(c, r, o), detailRoom)
	case Landed:
		c.phase = merged
		delete(h.passes, c.name)
		commit, hasReceipt := h.landedNow(c, r, o)
		if c.saidMerged {
			return // one MERGED per component, whichever job found it landed
		}
		c.saidMerged = true
		how := "landed"
		if o.Already {
			how = "was already"
		}
		said := fmt.Sprintf("queue: %s %s on %s at %s", c.name, how, h.cfg.Target, o.Commit)
		if hasReceipt {
			said += "; receipt: git notes --ref foreman show " + short(commit)
		}
		if o.Pruned {
			said += "; branch " + r.Ref + " deleted (host.prune)"
		}
		h.say(said + flakyNote(o.Flaky))
		line = "MERGED " + c.name
	default:
		return
	}
	h.recent = append(h.recent, Verdict{At: h.now, Run: r.Run, Kind: r.Kind.String(), Component: c.name,
		Result: o.Result.String(), Commit: o.Commit, Line: o.Line, Log: o.Log, URL: o.URL, Receipt: o.ReceiptFile})
	if len(h.recent) > keepRecent {
		h.recent = h.recent[len(h.recent)-keepRecent:]
	}
	h.say(line)
}

// flakyNote says which checks failed, then passed on the same tree.
func flakyNote(cmds []string) string {
	if len(cmds) == 0 {
		return ""
	}
	return " (flaky: " + bound(strings.Join(cmds, ", "), 120) + " failed, then passed on the same tree)"
}

// detailRoom is what a CI line's details may take: foreman echoes them in
// FIX after "CI failed: ", within its bound on free text.
const detailRoom = protocol.MaxText - 20

// failDetails is "<commit> <check: first failing line> log=<path>
// url=<url>", the failing line cut so that where the log is always fits.
func failDetails(o Outcome) string {
	tail := ""
	if o.Log != "" {
		tail += " log=" + o.Log
	}
	if o.URL != "" {
		tail += " url=" + o.URL
	}
	if len(tail) > detailRoom/2 { // a very long path: keep the URL, or the path alone
		tail = " log=" + o.Log
		if o.URL != "" {
			tail = " log=" + o.URL
		}
	}
	head := ""
	if o.Commit != "" {
		head = short(o.Commit) + " "
	}
	room := detailRoom - len(head) - len(tail)
	return head + bound(o.Line, room) + tail
}

// bound makes s one line of at most max bytes.
func bound(s string, max int) string {
	s = strings.TrimSpace(protocol.CleanText(s, max))
	if s == "" {
		s = "failed"
	}
	return s
}

// files lists conflicting files within the room a line has.
func files(list []string) string {
	var b strings.Builder
	for i, f := range list {
		f = protocol.CleanWord(f, 120)
		if b.Len()+len(f)+1 > detailRoom-20 {
			fmt.Fprintf(&b, " (and %d more)", len(list)-i)
			break
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f)
	}
	if b.Len() == 0 {
		return "(files not named)"
	}
	return b.String()
}

// short is a commit id as people read it.
func short(oid string) string {
	if len(oid) > 12 {
		return oid[:12]
	}
	return oid
}

// movedAfterApproval words the end of an approval whose branch moved (or
// was deleted) after what it held was approved: nothing stale lands, and
// nothing unreviewed either; the builder says READY again to have what it
// has now checked and reviewed.
func (h *Core) movedAfterApproval(c *comp, r *run, o Outcome) string {
	approved := r.Tip
	if approved == "" {
		approved = h.approvals[c.name].Tip
	}
	what := "was deleted"
	if o.Found != "" {
		what = "moved to " + short(o.Found)
	}
	return fmt.Sprintf("branch %s %s after %s was approved; say READY again to have it checked and reviewed", r.Ref, what, short(approved))
}
