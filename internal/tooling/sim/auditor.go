package sim

import (
	"slices"
	"strings"
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// Auditor scripts an auditor: it answers every REVIEW after Delay (give or
// take a tenth), PASS unless Fail has findings left for the component.
type Auditor struct {
	Delay time.Duration
	// Fail lists, per component, the findings of the reviews it fails, in
	// order: {"cart": {"a", "b"}} fails cart's first two reviews.
	Fail map[string][]string
}

type auditor struct {
	s    Auditor
	done map[string]int // reviews of each component failed so far
	// asked: since it asked foreman for the board, the reviews its STATUS
	// lines show waiting are owed too; pending are those it will answer.
	asked   bool
	pending map[string]bool
	late    bool // it joined a room where people had spoken: a build may be running
	// owed are the reviews foreman asked for before the auditor joined
	// that nobody has answered yet, in the order asked: an auditor
	// started late, or again after a crash, takes them up, or they would
	// wait for audit-overdue and then for a human.
	owed []string
}

func newAuditor(s Auditor) *auditor {
	if s.Delay <= 0 {
		s.Delay = 2 * time.Minute
	}
	return &auditor{s: s, done: map[string]int{}, pending: map[string]bool{}}
}

// start answers the reviews nobody answered before the auditor came and,
// when it came late, asks foreman for the board: a review asked for longer
// ago than the room's short history reaches is owed all the same.
func (a *auditor) start(w world) {
	for _, c := range a.owed {
		a.coordinator(w, reply{Verb: protocol.ReplyReview, C: c})
	}
	a.owed = nil
	if a.late {
		a.asked = true
		w.say("STATUS")
	}
}

func (a *auditor) agent(world, string, string) {}

// catchUp follows the reviews in the room's history: a REVIEW is owed an
// answer until someone's AUDIT of c, or until foreman moves c on (MERGED,
// FIX, RETRY, TASKS, an operator's command, an escalation that holds c).
// The history holds everything said after its oldest line, so a REVIEW
// still owed there is owed in the room.
func (a *auditor) catchUp(r reply) {
	a.late = true
	switch r.Verb {
	case protocol.ReplyReview:
		a.settle(r.C)
		a.owed = append(a.owed, r.C)
	case protocol.ReplyStatus: // says where c is; moves nothing
	case protocol.ReplyEscalate:
		if protocol.Escalation(r.Code).Holds() {
			a.settle(r.C)
		}
	case protocol.ReplyTasks:
		for _, c := range r.List {
			a.settle(c)
		}
	case protocol.ReplyOK: // OK <command> <c> ...
		c, _ := word(r.Rest)
		a.settle(c)
	default:
		a.settle(r.C)
	}
}

// catchUpAgent settles a review someone else answered.
func (a *auditor) catchUpAgent(_, line string) {
	a.late = true
	if cmd, err := protocol.Read(strings.TrimSpace(line)); err == nil && cmd.Verb == protocol.Audit {
		a.settle(cmd.Component)
	}
}

func (a *auditor) settle(c string) {
	a.owed = slices.DeleteFunc(a.owed, func(o string) bool { return o == c })
}

func (a *auditor) coordinator(w world, r reply) {
	switch {
	case r.Verb == protocol.ReplyStatus && a.asked:
		// STATUS c review ...: waiting for an audit, unless approved.
		state, rest := word(r.Rest)
		if state != "review" || strings.Contains(" "+rest+" ", " approved=yes ") {
			return
		}
	case r.Verb != protocol.ReplyReview:
		return
	}
	if a.pending[r.C] {
		return // answered already, or about to be
	}
	a.pending[r.C] = true
	verdict := a.verdict(r.C)
	w.after(spread(w, a.s.Delay), func() {
		delete(a.pending, r.C)
		w.say(line("AUDIT", r.C, verdict))
	})
}

// verdict is decided when the review is asked for, so two reviews of one
// component in flight get successive findings.
func (a *auditor) verdict(c string) string {
	return nextVerdict(a.s.Fail[c], a.done, c)
}

// nextVerdict is PASS, or FAIL with the next scripted finding.
func nextVerdict(findings []string, done map[string]int, c string) string {
	n := done[c]
	if n >= len(findings) {
		return "PASS"
	}
	done[c] = n + 1
	return line("FAIL", findings[n])
}
