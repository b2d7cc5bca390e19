package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/protocol"
)

// chatIntro is said when the chat client starts: typing at a silent
// prompt should not require reading the help first.
const chatIntro = `Type a line and press Enter to say it in the room: protocol lines (CLAIM api,
PROGRESS api 50, STATUS, RESOLVE api ...) or plain chat. /help lists them,
/who lists the room (names, ids, roles, owners), /quit leaves (so does Ctrl-D,
once what you typed has reached the room).
`

const chatHelp = `Lines you can say (the full guide: foreman prompt):
  builders   CLAIM c | PROGRESS c pct [note] | BLOCKED c dep [note]
             CONFLICT c other files|interface [details] | READY c pr | ABORT c reason
  reviewers  AUDIT c PASS|FAIL [details] | CI c PASS|FAIL|CONFLICT [details]
  anyone     STATUS [c]
  operators  ASSIGN c @id | RELEASE c | RESOLVE c [note] | OVERRIDE c | MERGED c
             DEPEND c dep | UNDEPEND c dep | ADD c [dep...] | PAUSE | RESUME
Sender ids (@cb883c6b0913051a) are shown as said, each followed by the name it
goes by: type the id back where a line wants one. ASSIGN c NAME sends the id of
the one member here who goes by NAME, and says so; with none or several it sends
nothing and says why.
Here, not sent:
  /who       who is in the room: names, ids, roles, what each owns
  /id NAME   the ids that go by NAME
  /help      this list
  /quit      leave
`

// clock shows a time of today as a time of day, and an older one with its
// date.
func clock(at, now time.Time) string {
	if at.IsZero() {
		at = now
	}
	at = at.In(now.Location())
	if y, m, d := at.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return at.Format(time.TimeOnly)
	}
	return at.Format("Jan 02 15:04:05")
}

// chat prints the room and sends what is typed, one line per message line,
// until /quit or the end of stdin (after what was typed has reached the
// room) or ctx. What the agent says is shown when the room echoes it, with
// the room's time: shown means delivered. Local notices go to notes.
func chat(ctx context.Context, stdin io.Reader, notes io.Writer, cfg agentchat.Config, show *roomShow, joined func()) error {
	show.arrived(agentchat.Agent{ID: show.Self, Name: cfg.Name})
	return converse(ctx, stdin, notes, cfg, chatTalker{show: show, notes: notes, name: cfg.Name, channel: cfg.Channel}, joined)
}

// chatTalker is the chat client's side of converse.
type chatTalker struct {
	show          *roomShow
	notes         io.Writer
	name, channel string
}

func (c chatTalker) heard(ev agentchat.Event) {
	show := c.show
	switch ev := ev.(type) {
	case agentchat.Joined: // what was said before, or while reconnecting
		clear(show.Here)
		show.arrived(ev.Agents...)
		show.arrived(agentchat.Agent{ID: show.Self, Name: c.name})
		for _, m := range ev.History {
			showMessage(show, m)
		}
	case agentchat.Message:
		showMessage(show, ev)
	case agentchat.AgentJoined:
		show.arrived(ev.Agent)
	case agentchat.AgentLeft:
		show.left(ev.Agent)
	}
}

func (c chatTalker) typed(l string) (string, bool) {
	switch {
	case l == "/quit" || l == "/exit":
		return "", true
	case l == "/help" || l == "/?":
		fmt.Fprint(c.notes, chatHelp)
	case l == "/who":
		c.show.who(c.notes, c.channel)
	case l == "/id" || strings.HasPrefix(l, "/id "):
		c.show.lookup(c.notes, strings.TrimSpace(strings.TrimPrefix(l, "/id")))
	case strings.HasPrefix(l, "/"):
		fmt.Fprintf(c.notes, "%s is not a command here: /help lists them (lines starting with / are never sent)\n", strings.Fields(l)[0])
	default:
		l, note, ok := c.show.ExpandAssign(l)
		if note != "" {
			fmt.Fprintln(c.notes, note)
		}
		if ok {
			return l, false
		}
	}
	return "", false
}

func (c chatTalker) said(l string, d agentchat.Delivered) {
	c.show.lineAt(d.TS, c.show.Self, c.show.Names[c.show.Self], l)
}

// showMessage shows a room message at the time the room says it was sent,
// the agent's own earlier ones included; server notices are not shown.
// foreman's stamp names the coordinator when its first TASKS is no longer
// in the room's history.
func showMessage(show *roomShow, m agentchat.Message) {
	if m.Notice {
		return
	}
	if show.Coord == "" && m.Stamp != nil && strings.HasPrefix(m.Stamp.Tag, "foreman ") {
		show.Coord = m.From
	}
	for l := range protocol.Lines(m.Body()) {
		show.lineAt(m.TS, m.From, m.FromName, strings.TrimSpace(l))
	}
}
