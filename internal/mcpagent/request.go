package mcpagent

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentforeman/foreman/protocol"
)

// Answer is what a tool returns: the lines said, and foreman's answer to
// them.
type Answer struct {
	Said []string `json:"said" jsonschema:"the lines said in the room"`
	// Answered: foreman answered within the wait. When false its answer,
	// if it comes later, is returned by wait().
	Answered bool `json:"answered" jsonschema:"foreman answered in time; if false, wait() returns its answer when it comes"`
	// Accepted: the line was taken (ACK for a claim; no REJECT or ERROR
	// for the others).
	Accepted bool    `json:"accepted" jsonschema:"the line was taken: ACK for claim, no REJECT or ERROR for the others"`
	Replies  []Event `json:"replies" jsonschema:"foreman's lines that answer it, in order, read into their parts"`
	Note     string  `json:"note" jsonschema:"what the answer means, in a sentence"`
	// Handoff: claim() of a component a builder left with work pushed.
	Handoff *Handoff `json:"handoff,omitempty" jsonschema:"claim: the work the last builder left: its branch, and the host's pinned ref and commit to start from"`
}

// kind is what a request is, for how foreman answers it.
type kind uint8

const (
	askClaim kind = iota
	askProgress
	askBlocked // BLOCKED and CONFLICT: WAIT, UNBLOCKED or ESCALATE
	askReady
	askAbort
	askAudit
	askStatus
	askBoard
)

// matcher reads foreman's lines for the answer to one request. foreman
// says nothing to an accepted PROGRESS (nor to READY under CI gating, a
// soft ABORT, an AUDIT in external merge mode), so such requests end with
// STATUS c: its line is the answer, and shows the request took effect.
type matcher struct {
	kind   kind
	c      string
	self   string
	pct    int
	branch string // askProgress: the branch named, which STATUS must show
}

// take reports whether a line of foreman's belongs to the answer, and
// whether the answer is complete with it.
func (m matcher) take(h protocol.Heard) (took, done bool) {
	if h.Verb == protocol.ReplyError && h.Subject == m.self {
		return true, true // the line was malformed after all
	}
	if m.kind == askBoard {
		return h.Verb == protocol.ReplyStatus, false
	}
	if h.Subject != m.c {
		return false, false
	}
	mine := h.Agent == m.self
	if h.Verb == protocol.ReplyReject {
		return mine, mine
	}
	owner := h.Field("owner")
	switch m.kind {
	case askClaim:
		return h.Verb == protocol.ReplyAck && mine, h.Verb == protocol.ReplyAck && mine
	case askProgress:
		if h.Verb == protocol.ReplyStatus {
			return true, owner == m.self && h.Field("progress") == fmt.Sprintf("%d%%", m.pct) &&
				(m.branch == "" || h.Field("branch") == m.branch)
		}
	case askBlocked:
		switch h.Verb {
		case protocol.ReplyWait, protocol.ReplyUnblocked:
			return mine, mine
		case protocol.ReplyEscalate:
			return true, true
		}
	case askReady:
		switch h.Verb {
		case protocol.ReplyReview:
			return mine, mine
		case protocol.ReplyStatus:
			return true, owner == m.self && (h.State == "ci" || h.State == "review")
		}
	case askAbort:
		switch h.Verb {
		case protocol.ReplyEscalate:
			return true, true
		case protocol.ReplyStatus:
			return true, owner != m.self
		}
	case askAudit:
		switch h.Verb {
		case protocol.ReplyFix, protocol.ReplyRetry, protocol.ReplyMerged, protocol.ReplyEscalate:
			return true, false
		case protocol.ReplyStatus:
			return true, h.State != "review"
		}
	case askStatus:
		return h.Verb == protocol.ReplyStatus, h.Verb == protocol.ReplyStatus
	}
	return false, false
}

// request is one tool call waiting for foreman's answer.
type request struct {
	m        matcher
	lines    []string
	seqs     []uint64 // its lines' numbers; it is live once the room has them all
	replies  []Event
	took     bool // a line was taken since the last message began
	complete bool
	finished bool
	done     chan struct{}
}

// delivered notes lines the room has: replies count only after that.
func (r *request) delivered(seqs []uint64) {
	r.seqs = slices.DeleteFunc(r.seqs, func(n uint64) bool { return slices.Contains(seqs, n) })
}

func (r *request) live() bool { return !r.finished && len(r.seqs) == 0 }

// offer gives the request one of foreman's lines; true if it took it.
func (r *request) offer(h protocol.Heard, e Event) bool {
	took, done := r.m.take(h)
	if !took {
		return false
	}
	r.replies = append(r.replies, e)
	r.took = true
	if done {
		r.complete = true
		r.finish(true)
	}
	return true
}

// endOfMessage ends a board request with the message that carried its
// lines: foreman says the whole board in one message.
func (r *request) endOfMessage() {
	if r.m.kind == askBoard && r.took && !r.finished {
		r.complete = true
		r.finish(true)
	}
	r.took = false
}

func (r *request) finish(bool) {
	if !r.finished {
		r.finished = true
		close(r.done)
	}
}

// answer sums the request up.
func (r *request) answer(connected bool) Answer {
	a := Answer{Said: r.lines, Answered: r.complete, Replies: r.replies}
	if a.Replies == nil {
		a.Replies = []Event{}
	}
	var refusal *Reply
	for _, e := range r.replies {
		if v := e.Reply.Verb; v == "REJECT" || v == "ERROR" {
			refusal = e.Reply
		}
	}
	switch {
	case !r.complete:
		where := "the room connection is up, so foreman may be down or busy"
		if !connected {
			where = "the room connection is down and being retried"
		}
		a.Note = fmt.Sprintf("no answer from foreman yet (%s); wait() returns it when it comes", where)
	case refusal != nil:
		a.Note = "refused: " + refusal.Text + "; nothing changed"
	case r.m.kind == askClaim:
		a.Accepted = true
		a.Note = fmt.Sprintf("%s is yours; check in with progress() at least once per check-in interval", r.m.c)
		if ctx := r.replies[len(r.replies)-1].Reply.Text; ctx != "" {
			a.Note += "; the last builder left: " + ctx
			if b, ok := protocol.HandedBranch(ctx); ok {
				a.Handoff = &Handoff{Component: r.m.c, Branch: b}
				a.Note += "; its work is on " + b + ": start from there, not from nothing"
			}
		}
	default:
		a.Accepted = true
		a.Note = r.summary()
	}
	return a
}

// summary says what an accepted line led to.
func (r *request) summary() string {
	var said []string
	for _, e := range r.replies {
		said = append(said, e.Text)
	}
	switch r.m.kind {
	case askProgress:
		return "taken: " + r.m.c + " checked in"
	case askStatus, askBoard:
		return fmt.Sprintf("%d status line(s)", len(r.replies))
	}
	return "taken; foreman said: " + strings.Join(said, " | ")
}
