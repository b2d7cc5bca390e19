package protocol

import (
	"fmt"
	"strconv"
	"strings"
)

// The coordinator's replies (contract section 3). Every function returns
// exactly one line: names are cleaned to one word and free text is cleaned
// and bounded, so nothing a sender supplies can start a second line.

// ReplyVerb is the first word of a reply line.
type ReplyVerb uint8

// The reply verbs, in the order of contract section 3.
const (
	NoReply ReplyVerb = iota
	ReplyTasks
	ReplyAck
	ReplyReject
	ReplyTimeout
	ReplyRetry
	ReplyEscalate
	ReplyReview
	ReplyFix
	ReplyWait
	ReplyUnblocked
	ReplyMerged
	ReplyComplete
	ReplyStatus
	ReplyOK
	ReplyError
	numReplyVerbs
)

var replyNames = [numReplyVerbs]string{"", "TASKS", "ACK", "REJECT", "TIMEOUT", "RETRY", "ESCALATE",
	"REVIEW", "FIX", "WAIT", "UNBLOCKED", "MERGED", "COMPLETE", "STATUS", "OK", "ERROR"}

// String returns the verb as written.
func (v ReplyVerb) String() string {
	if v >= numReplyVerbs {
		return "REPLY(?)"
	}
	return replyNames[v]
}

// ReplyVerbs lists every reply verb, in contract order.
func ReplyVerbs() []ReplyVerb {
	out := make([]ReplyVerb, 0, numReplyVerbs-1)
	for v := ReplyTasks; v < numReplyVerbs; v++ {
		out = append(out, v)
	}
	return out
}

// LookupReplyVerb finds the reply verb a word names, as written (upper
// case); NoReply if it names none.
func LookupReplyVerb(word string) ReplyVerb {
	for v := ReplyTasks; v < numReplyVerbs; v++ {
		if replyNames[v] == word {
			return v
		}
	}
	return NoReply
}

// VerbOf returns the reply verb a line starts with; NoReply if none. It is
// for those who hear replies in the room (agents, tests), never for the
// coordinator, which knows what it said.
func VerbOf(line string) ReplyVerb {
	word, _, _ := strings.Cut(line, " ")
	return LookupReplyVerb(word)
}

// Reply is one line the coordinator says, with what it is about kept apart
// so that nobody has to read the line again to know.
type Reply struct {
	Verb    ReplyVerb
	Subject string     // the component, "build", or the sender an ERROR answers; "" for TASKS
	Code    Escalation // ESCALATE only
	Detail  string     // the free text at the end, as cleaned: a reason, context, findings
	Text    string     // the whole line
}

func (r Reply) String() string { return r.Text }

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
	BudgetSpent       Escalation = "budget" // spend reached a budget (contract section 4)
	// HostFault: the host cannot run c's checks for a reason of its own
	// (a check program missing or not executable, the sandbox failing):
	// held, nothing charged to the builder.
	HostFault Escalation = "host-fault"
)

// Escalations lists every code, in contract order.
func Escalations() []Escalation {
	return []Escalation{AuditExhausted, AuditOverdue, HardBlocker, NeedInfo,
		InterfaceConflict, CIExhausted, ClaimDispute, Cycle, Overtime, BudgetSpent, HostFault}
}

// Holds reports whether an ESCALATE with this code freezes the component it
// names until an operator decides (contract section 4). Audit-overdue and
// claim-dispute only ask for a look, and overtime is about the build; every
// other code holds, so does a code this version does not know, as the
// cautious reading for a listener.
func (e Escalation) Holds() bool {
	switch e {
	case AuditOverdue, ClaimDispute, Overtime:
		return false
	}
	return true
}

// BuildSubject is the subject of build-level ESCALATE and ERROR lines
// (contract section 3). No component may be named so.
const BuildSubject = "build"

// line joins words into one reply. The first is the reply verb; names are
// made one safe word; the last, free text, is cleaned and bounded.
type line struct {
	r Reply
	b strings.Builder
}

func newLine(verb ReplyVerb) *line {
	l := &line{r: Reply{Verb: verb}}
	l.b.Grow(64)
	l.b.WriteString(verb.String())
	return l
}

// subject writes the first name, the one the reply is about.
func (l *line) subject(s string) *line {
	l.name(s)
	l.r.Subject = CleanWord(s, MaxName)
	return l
}

func (l *line) name(s string) *line { return l.word(s, MaxName) }

func (l *line) word(s string, max int) *line {
	l.b.WriteByte(' ')
	l.b.WriteString(CleanWord(s, max))
	return l
}

func (l *line) text(s string) *line { return l.textMax(s, MaxText) }

func (l *line) textMax(s string, max int) *line {
	if s = strings.TrimSpace(CleanText(s, max)); s != "" {
		l.b.WriteByte(' ')
		l.b.WriteString(s)
		l.r.Detail = s
	}
	return l
}

func (l *line) reply() Reply {
	l.r.Text = l.b.String()
	return l.r
}

// Tasks lists the claimable components, in declaration order. The list can
// be long (a build of thousands), so the line is sized once, and names that
// are valid component names, as the engine's always are, are not cleaned.
//
// claimAgain, on the build's first TASKS only, names those whose CLAIM came
// before the bot joined the room (contract section 1): after the list, a
// TasksNote mark (no component is named so), then who must claim again.
// Readers stop the list at the mark (ReadReply, TaskList).
func Tasks(components []string, claimAgain ...string) Reply {
	size := len("TASKS")
	for _, c := range components {
		size += 1 + len(c)
	}
	var b strings.Builder
	b.Grow(size)
	b.WriteString("TASKS")
	for _, c := range components {
		b.WriteByte(' ')
		if ValidComponent(c) {
			b.WriteString(c)
		} else {
			b.WriteString(CleanWord(c, MaxName))
		}
	}
	if len(claimAgain) > 0 {
		b.WriteString(" " + TasksNote + " claim again:")
		shown := claimAgain[:min(len(claimAgain), MaxClaimAgain)]
		for _, a := range shown {
			b.WriteString(" " + CleanWord(a, MaxName))
		}
		if more := len(claimAgain) - len(shown); more > 0 {
			fmt.Fprintf(&b, " and %d more", more)
		}
		b.WriteString(" (your CLAIM came before foreman joined the room)")
	}
	return Reply{Verb: ReplyTasks, Text: b.String()}
}

// TasksNote ends the list of a TASKS line where a note follows it: no
// component name starts with a dash.
const TasksNote = "--"

// MaxClaimAgain is how many senders a TASKS names as having to claim again;
// the rest are counted.
const MaxClaimAgain = 10

// TaskList reads what follows TASKS: the claimable components, up to the
// first word that cannot be one (TasksNote), and the note after them.
func TaskList(rest string) (components []string, note string) {
	rest = strings.TrimSpace(rest)
	for rest != "" {
		w, tail, _ := strings.Cut(rest, " ")
		if !ValidComponent(w) {
			return components, strings.TrimSpace(strings.TrimPrefix(rest, TasksNote))
		}
		components = append(components, w)
		rest = strings.TrimLeft(tail, " ")
	}
	return components, ""
}

// ClaimAgain reads a TASKS note: the senders it names as having to claim
// again (those it counts are left out).
func ClaimAgain(note string) []string {
	list, ok := strings.CutPrefix(note, "claim again:")
	if !ok {
		return nil
	}
	list, _, _ = strings.Cut(list, "(")
	var out []string
	for _, w := range strings.Fields(list) {
		if ValidAgent(w) {
			out = append(out, w)
		}
	}
	return out
}

// Ack assigns c to agent; context says what an earlier builder left.
func Ack(c, agent, context string) Reply {
	return newLine(ReplyAck).subject(c).name(agent).text(context).reply()
}

// Reject refuses a line; nothing changed.
func Reject(c, agent, reason string) Reply {
	return newLine(ReplyReject).subject(c).name(agent).text(reason).reply()
}

// Timeout says agent missed its check-ins on c.
func Timeout(c, agent string) Reply {
	return newLine(ReplyTimeout).subject(c).name(agent).reply()
}

// Retry says agent used all its audit attempts on c.
func Retry(c, agent string) Reply {
	return newLine(ReplyRetry).subject(c).name(agent).reply()
}

// Escalate asks a human to decide about subject (a component or "build").
// what says what happened and may echo what senders wrote; suggestion
// names the operator command that resolves it (contract section 6). When
// the two do not fit in the bound, what is cut and the suggestion is kept
// whole: it is what the human needs to act.
func Escalate(subject string, code Escalation, what, suggestion string) Reply {
	l := newLine(ReplyEscalate).subject(subject).name(string(code))
	l.r.Code = code
	suggestion = strings.TrimSpace(CleanText(suggestion, MaxText/2))
	if suggestion == "" {
		return l.text(what).reply()
	}
	room := MaxText - len(suggestion) - len("; ")
	what = strings.TrimSpace(CleanText(what, room))
	if what == "" {
		return l.text(suggestion).reply()
	}
	return l.textMax(what+"; "+suggestion, MaxText).reply()
}

// Review says c awaits audit.
func Review(c, agent, pr string) Reply {
	return newLine(ReplyReview).subject(c).name(agent).word(pr, MaxText).reply()
}

// Fix steps c back to its builder with attempt n of max.
func Fix(c, agent string, n, max int, text string) Reply {
	return newLine(ReplyFix).subject(c).name(agent).name(strconv.Itoa(n) + "/" + strconv.Itoa(max)).text(text).reply()
}

// Wait accepts pushback: c waits for dep.
func Wait(c, agent, dep string) Reply {
	return newLine(ReplyWait).subject(c).name(agent).name(dep).reply()
}

// Unblocked says what c waited for is there.
func Unblocked(c, agent string) Reply {
	return newLine(ReplyUnblocked).subject(c).name(agent).reply()
}

// MergedLine says c is merged.
func MergedLine(c string) Reply {
	return newLine(ReplyMerged).subject(c).reply()
}

// Complete says every component of build is merged.
func Complete(build string) Reply {
	return newLine(ReplyComplete).subject(build).reply()
}

// Field is one key=value of a STATUS line.
type Field struct{ Key, Value string }

// StatusLine describes c: its state and why it is there.
func StatusLine(c, state string, fields []Field) Reply {
	l := newLine(ReplyStatus).subject(c).name(state)
	for _, f := range fields {
		l.b.WriteByte(' ')
		l.b.WriteString(CleanWord(f.Key, MaxName))
		l.b.WriteByte('=')
		l.b.WriteString(CleanWord(f.Value, MaxText))
	}
	return l.reply()
}

// OK confirms an operator command, as read.
func OK(cmd Command) Reply {
	r := newLine(ReplyOK).text(cmd.String()).reply()
	r.Subject = cmd.Component
	return r
}

// Released confirms RELEASE c for a component taken from its builder, and
// names that builder after the command ("OK RELEASE api from @b1"), so that
// it hears it is to stop. The contract's OK is the command as read; what
// follows it is more, as a replay reads a line that continues the one it
// expected (ReadConfirmed reads the command back).
func Released(cmd Command, owner string) Reply {
	if owner == "" {
		return OK(cmd)
	}
	r := newLine(ReplyOK).text(cmd.String() + " from " + CleanWord(owner, MaxName)).reply()
	r.Subject = cmd.Component
	return r
}

// Notice is a chat line from the coordinator to agent about c: no verb, so
// nobody reads it as a command or a reply (a budget's 80% warning). It
// starts with the agent's id, or with c when it is for the room.
func Notice(agent, c, text string) Reply {
	var b strings.Builder
	if agent != "" {
		b.WriteString(CleanWord(agent, MaxName) + " ")
	}
	b.WriteString(CleanWord(c, MaxName) + ": ")
	b.WriteString(strings.TrimSpace(CleanText(text, MaxText)))
	return Reply{Verb: NoReply, Subject: CleanWord(c, MaxName), Detail: text, Text: b.String()}
}

// Error answers a malformed line (subject: the sender) or a build-level fault
// (subject: BuildSubject).
func Error(subject, text string) Reply {
	return newLine(ReplyError).subject(subject).text(text).reply()
}
