package demo

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// Member is how the log shows a sender.
type Member struct {
	Name string
	Role string // RoleCoordinator, or a sim role (builder, auditor, ci, operator); "" if unknown
}

// RoleCoordinator is foreman's role in the log.
const RoleCoordinator = "coordinator"

// Printer writes room lines as a chat log, one line each: time, sender,
// role, the line. Sender ids inside lines are shown as @name, which is what
// makes the log readable; Entry keeps the lines as said.
type Printer struct {
	W     io.Writer
	Color bool
	names map[string]Member
	ids   *strings.Replacer
}

// NewPrinter makes a printer that knows the members by sender id.
func NewPrinter(w io.Writer, color bool, members map[string]Member) *Printer {
	p := &Printer{W: w, Color: color, names: members}
	var pairs []string
	for id, m := range members {
		pairs = append(pairs, id, "@"+m.Name)
	}
	p.ids = strings.NewReplacer(pairs...)
	return p
}

// Member returns what the printer knows of id; an unknown id is its own name.
func (p *Printer) Member(id string) Member {
	if m, ok := p.names[id]; ok {
		return m
	}
	return Member{Name: id}
}

// Print writes one line said by m at the time shown as at.
func (p *Printer) Print(at string, m Member, line string) {
	text := p.ids.Replace(line)
	if !p.Color {
		fmt.Fprintf(p.W, "%s  %-8s %-11s %s\n", at, m.Name, m.Role, text)
		return
	}
	fmt.Fprintf(p.W, "%s  %s %s %s\n",
		paint(dim, at), paint(roleColor[m.Role], fmt.Sprintf("%-8s", m.Name)),
		paint(dim, fmt.Sprintf("%-11s", m.Role)), paint(lineColor(m.Role, text), text))
}

// Clock shows contract time as hours and minutes since the build started.
func Clock(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	m := int(d / time.Minute)
	return fmt.Sprintf("%02d:%02d", m/60, m%60)
}

// ANSI colours.
const (
	reset   = "\x1b[0m"
	bold    = "\x1b[1m"
	dim     = "\x1b[2m"
	red     = "\x1b[31m"
	green   = "\x1b[32m"
	yellow  = "\x1b[33m"
	blue    = "\x1b[34m"
	magenta = "\x1b[35m"
	cyan    = "\x1b[36m"
	alarm   = "\x1b[1;97;41m" // white on red: a human must look
	warn    = "\x1b[1;31m"
	done    = "\x1b[1;32m"
)

func paint(color, s string) string {
	if color == "" {
		return s
	}
	return color + s + reset
}

var roleColor = map[string]string{
	RoleCoordinator: bold,
	"builder":       cyan,
	"auditor":       magenta,
	"ci":            blue,
	"operator":      yellow,
}

// replyColor makes what needs attention stand out and success look like it.
var replyColor = map[protocol.ReplyVerb]string{
	protocol.ReplyEscalate:  alarm,
	protocol.ReplyTimeout:   warn,
	protocol.ReplyRetry:     warn,
	protocol.ReplyError:     red,
	protocol.ReplyReject:    yellow,
	protocol.ReplyFix:       yellow,
	protocol.ReplyWait:      yellow,
	protocol.ReplyUnblocked: cyan,
	protocol.ReplyReview:    magenta,
	protocol.ReplyAck:       bold,
	protocol.ReplyTasks:     blue,
	protocol.ReplyMerged:    green,
	protocol.ReplyComplete:  done,
	protocol.ReplyOK:        yellow,
}

func lineColor(role, text string) string {
	verb := strings.ToUpper(firstWord(text))
	if role == RoleCoordinator {
		return replyColor[protocol.LookupReplyVerb(verb)]
	}
	switch verb {
	case "PROGRESS":
		return dim
	case "ABORT":
		return red
	case "BLOCKED", "CONFLICT":
		return yellow
	case "AUDIT", "CI":
		if strings.Contains(strings.ToUpper(text), " FAIL") {
			return magenta
		}
		return green
	}
	return ""
}
