package protocol

import (
	"strconv"
	"strings"
)

// The coordinator's replies (contract section 3). Every function returns
// exactly one line: names are cleaned to one word and free text is cleaned
// and bounded, so nothing a sender supplies can start a second line.

// Reply verbs, as written.
const (
	ReplyTasks     = "TASKS"
	ReplyAck       = "ACK"
	ReplyReject    = "REJECT"
	ReplyTimeout   = "TIMEOUT"
	ReplyRetry     = "RETRY"
	ReplyEscalate  = "ESCALATE"
	ReplyReview    = "REVIEW"
	ReplyFix       = "FIX"
	ReplyWait      = "WAIT"
	ReplyUnblocked = "UNBLOCKED"
	ReplyMerged    = "MERGED"
	ReplyComplete  = "COMPLETE"
	ReplyStatus    = "STATUS"
	ReplyOK        = "OK"
	ReplyError     = "ERROR"
)

// Escalation is an escalation code (contract section 6).
type Escalation string

// The escalation codes.
const (
	AuditExhausted    Escalation = "audit-exhausted"
	AuditOverdue      Escalation = "audit-overdue"
	HardBlocker       Escalation = "hard-blocker"
	NeedInfo          Escalation = "need-info"
	InterfaceConflict Escalation = "interface-conflict"
	CIExhausted       Escalation = "ci-exhausted"
	ClaimDispute      Escalation = "claim-dispute"
	Cycle             Escalation = "cycle"
	Overtime          Escalation = "overtime"
)

// Escalations lists every code, in contract order.
func Escalations() []Escalation {
	return []Escalation{AuditExhausted, AuditOverdue, HardBlocker, NeedInfo,
		InterfaceConflict, CIExhausted, ClaimDispute, Cycle, Overtime}
}

// line joins words into one reply line. The first is the reply verb; names
// are made one safe word; the last, free text, is cleaned and bounded.
type line struct{ b strings.Builder }

func newLine(verb string) *line {
	l := &line{}
	l.b.Grow(64)
	l.b.WriteString(verb)
	return l
}

func (l *line) name(s string) *line { return l.word(s, MaxName) }

func (l *line) word(s string, max int) *line {
	l.b.WriteByte(' ')
	l.b.WriteString(CleanWord(s, max))
	return l
}

func (l *line) text(s string) *line {
	if s = strings.TrimSpace(CleanText(s, MaxText)); s != "" {
		l.b.WriteByte(' ')
		l.b.WriteString(s)
	}
	return l
}

func (l *line) String() string { return l.b.String() }

// Tasks lists the claimable components, in declaration order. The list can
// be long (a build of thousands), so the line is sized once, and names that
// are valid component names, as the engine's always are, are not cleaned.
func Tasks(components []string) string {
	size := len(ReplyTasks)
	for _, c := range components {
		size += 1 + len(c)
	}
	var b strings.Builder
	b.Grow(size)
	b.WriteString(ReplyTasks)
	for _, c := range components {
		b.WriteByte(' ')
		if ValidComponent(c) {
			b.WriteString(c)
		} else {
			b.WriteString(CleanWord(c, MaxName))
		}
	}
	return b.String()
}

// Ack assigns c to agent; context says what an earlier builder left.
func Ack(c, agent, context string) string {
	return newLine(ReplyAck).name(c).name(agent).text(context).String()
}

// Reject refuses a line; nothing changed.
func Reject(c, agent, reason string) string {
	return newLine(ReplyReject).name(c).name(agent).text(reason).String()
}

// Timeout says agent missed its check-ins on c.
func Timeout(c, agent string) string {
	return newLine(ReplyTimeout).name(c).name(agent).String()
}

// Retry says agent used all its audit attempts on c.
func Retry(c, agent string) string {
	return newLine(ReplyRetry).name(c).name(agent).String()
}

// Escalate asks a human to decide about subject (a component or the build).
func Escalate(subject string, code Escalation, text string) string {
	return newLine(ReplyEscalate).name(subject).name(string(code)).text(text).String()
}

// Review says c awaits audit.
func Review(c, agent, pr string) string {
	return newLine(ReplyReview).name(c).name(agent).word(pr, MaxText).String()
}

// Fix steps c back to its builder with attempt n of max.
func Fix(c, agent string, n, max int, text string) string {
	return newLine(ReplyFix).name(c).name(agent).name(strconv.Itoa(n) + "/" + strconv.Itoa(max)).text(text).String()
}

// Wait accepts pushback: c waits for dep.
func Wait(c, agent, dep string) string {
	return newLine(ReplyWait).name(c).name(agent).name(dep).String()
}

// Unblocked says what c waited for is there.
func Unblocked(c, agent string) string {
	return newLine(ReplyUnblocked).name(c).name(agent).String()
}

// MergedLine says c is merged.
func MergedLine(c string) string {
	return newLine(ReplyMerged).name(c).String()
}

// Complete says every component of build is merged.
func Complete(build string) string {
	return newLine(ReplyComplete).name(build).String()
}

// Field is one key=value of a STATUS line.
type Field struct{ Key, Value string }

// StatusLine describes c: its state and why it is there.
func StatusLine(c, state string, fields []Field) string {
	l := newLine(ReplyStatus).name(c).name(state)
	for _, f := range fields {
		l.b.WriteByte(' ')
		l.b.WriteString(CleanWord(f.Key, MaxName))
		l.b.WriteByte('=')
		l.b.WriteString(CleanWord(f.Value, MaxText))
	}
	return l.String()
}

// OK confirms an operator command, as read.
func OK(cmd Command) string {
	return newLine(ReplyOK).text(cmd.String()).String()
}

// Error answers a malformed line (subject: the sender) or a build-level fault
// (subject: "build").
func Error(subject, text string) string {
	return newLine(ReplyError).name(subject).text(text).String()
}

// ReplyVerb returns the first word of a reply line.
func ReplyVerb(line string) string {
	if i := strings.IndexByte(line, ' '); i >= 0 {
		return line[:i]
	}
	return line
}
