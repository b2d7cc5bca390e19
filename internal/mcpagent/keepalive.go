package mcpagent

import (
	"fmt"
	"sort"
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// keepalive decides the automatic check-ins: while the agent works on a
// component it owns (building or blocked) without saying anything about
// it, a PROGRESS with its last real percentage goes out before a check-in
// interval would pass, saying that it is automatic; and only for as long
// as the agent keeps calling tools now and then (the bound), so that a
// dead agent still times out. It is pure: every method takes the time.
type keepalive struct {
	interval time.Duration // foreman's checkin_interval
	bound    time.Duration // mcp.keepalive: no automatic check-in this long after the agent's last tool call; 0: none at all
	lastCall time.Time
	busy     int // tool calls under way: an agent blocked in wait() is alive
	duties   map[string]*duty
}

// duty is what the agent owes foreman about one component.
type duty struct {
	due      bool      // it owns c and c is building or blocked: check-ins are required
	lastLine time.Time // its last line about c, its own or automatic
	lastReal time.Time // its last line about c said by the agent itself
	pct      int       // its own last PROGRESS
	reported bool
	handed   int // the progress the ACK handed over from the last builder
	hasHand  bool
	autos    int  // automatic check-ins since the agent's own last line
	stopped  bool // the bound passed: no more automatic check-ins until the agent calls a tool
}

func newKeepalive(interval, bound time.Duration, now time.Time) *keepalive {
	return &keepalive{interval: interval, bound: bound, lastCall: now, duties: map[string]*duty{}}
}

// lead is how long after a line the automatic check-in goes: a quarter of
// the interval early, for pacing and the room's latency.
func (k *keepalive) lead() time.Duration { return k.interval * 3 / 4 }

func (k *keepalive) duty(c string) *duty {
	d := k.duties[c]
	if d == nil {
		d = &duty{}
		k.duties[c] = d
	}
	return d
}

// call records a tool call by the agent, begun or ended: it is alive.
func (k *keepalive) call(now time.Time) {
	k.lastCall = now
	for _, d := range k.duties {
		d.stopped = false
	}
}

// begin and end bracket a tool call: while one is under way the agent
// counts as calling.
func (k *keepalive) begin(now time.Time) { k.busy++; k.call(now) }
func (k *keepalive) end(now time.Time)   { k.busy = max(k.busy-1, 0); k.call(now) }

// idle is how long the agent has called no tool.
func (k *keepalive) idle(now time.Time) time.Duration {
	if k.busy > 0 {
		return 0
	}
	return now.Sub(k.lastCall)
}

// said records a line the agent itself said.
func (k *keepalive) said(cmd protocol.Command, now time.Time) {
	c := cmd.Component
	switch cmd.Verb {
	case protocol.Progress, protocol.Blocked, protocol.Conflict:
		d := k.duty(c)
		d.lastLine, d.lastReal, d.autos = now, now, 0
		if cmd.Verb == protocol.Progress {
			d.pct, d.reported = cmd.Percent, true
		}
	case protocol.Ready: // in CI or review now: no check-ins until a FIX
		d := k.duty(c)
		d.lastLine, d.lastReal, d.autos, d.due = now, now, 0, false
	case protocol.Abort:
		delete(k.duties, c)
	}
}

// heard records one of foreman's replies.
func (k *keepalive) heard(h protocol.Heard, self string, now time.Time) {
	c := h.Subject
	mine := h.Agent == self
	switch h.Verb {
	case protocol.ReplyAck:
		if !mine {
			delete(k.duties, c)
			return
		}
		d := k.duty(c)
		d.due, d.lastLine, d.autos = true, now, 0
		if p, ok := percentLeft(h.Text); ok {
			d.handed, d.hasHand = p, true
		}
	case protocol.ReplyFix, protocol.ReplyUnblocked, protocol.ReplyWait:
		if mine {
			d := k.duty(c)
			d.due = true
			if h.Verb != protocol.ReplyWait { // the clock restarts
				d.lastLine = now
			}
		}
	case protocol.ReplyReview:
		if d := k.duties[c]; d != nil {
			d.due = false
		}
	case protocol.ReplyTimeout, protocol.ReplyRetry:
		if mine {
			delete(k.duties, c)
		}
	case protocol.ReplyMerged:
		delete(k.duties, c)
	case protocol.ReplyEscalate:
		if d := k.duties[c]; d != nil && h.Code.Holds() {
			d.due = false // held: no timers until an operator's RESOLVE (ACK) or ASSIGN
		}
	case protocol.ReplyStatus:
		owner := h.Field("owner")
		if owner != self {
			delete(k.duties, c)
			return
		}
		d := k.duty(c)
		d.due = h.State == "building" || h.State == "blocked"
		if p, ok := percent(h.Field("progress")); ok && !d.reported && !d.hasHand {
			d.handed, d.hasHand = p, true
		}
	}
}

func percent(s string) (int, bool) {
	if len(s) < 2 || s[len(s)-1] != '%' {
		return 0, false
	}
	var n int
	if _, err := fmt.Sscanf(s, "%d%%", &n); err != nil || n < 0 || n > 100 {
		return 0, false
	}
	return n, true
}

// next is when due should be called next; zero when no check-in is owed.
func (k *keepalive) next() time.Time {
	if k.bound <= 0 || k.interval <= 0 {
		return time.Time{}
	}
	var at time.Time
	for _, d := range k.duties {
		if !d.due || d.stopped {
			continue
		}
		if t := d.lastLine.Add(k.lead()); at.IsZero() || t.Before(at) {
			at = t
		}
	}
	return at
}

// checkin is an automatic check-in to send, or the notice that they
// stopped.
type checkin struct {
	Component string
	Line      string // the PROGRESS line; "" when Stopped
	Stopped   bool
	Note      string // what happened, for the agent
}

// due returns the check-ins owed at now, in component order, and marks
// them said.
func (k *keepalive) due(now time.Time) []checkin {
	if k.bound <= 0 || k.interval <= 0 {
		return nil
	}
	var names []string
	for c, d := range k.duties {
		if d.due && !d.stopped && !now.Before(d.lastLine.Add(k.lead())) {
			names = append(names, c)
		}
	}
	sort.Strings(names)
	var out []checkin
	idle := k.idle(now)
	for _, c := range names {
		d := k.duties[c]
		if idle > k.bound {
			d.stopped = true
			out = append(out, checkin{Component: c, Stopped: true, Note: fmt.Sprintf(
				"automatic check-ins on %s stopped: no tool call for %s (mcp.keepalive is %s); say PROGRESS %s (progress tool) or foreman times it out",
				c, short(idle), short(k.bound), c)})
			continue
		}
		pct, what := d.pct, ""
		switch {
		case d.reported:
			what = fmt.Sprintf("last real progress %d%%, said %s ago", d.pct, short(now.Sub(d.lastReal)))
		case d.hasHand:
			pct, what = d.handed, fmt.Sprintf("no progress said yet; %d%% handed over", d.handed)
		default:
			what = "no progress said yet"
		}
		d.lastLine = now
		d.autos++
		out = append(out, checkin{Component: c,
			Line: fmt.Sprintf("PROGRESS %s %d automatic check-in by foreman mcp (%d): %s; %s",
				c, pct, d.autos, activity(idle), what)})
	}
	return out
}

// activity says when the agent last called a tool.
func activity(idle time.Duration) string {
	if idle == 0 {
		return "the agent is waiting in a tool call"
	}
	return "the agent last called a tool " + short(idle) + " ago"
}

// short writes a duration rounded for people.
func short(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// owned lists the components the agent owns as far as foreman's replies
// tell, for the tools' answers.
func (k *keepalive) owned() []Holding {
	var out []Holding
	for c, d := range k.duties {
		h := Holding{Component: c, CheckinsDue: d.due, AutoCheckins: d.autos, AutoStopped: d.stopped}
		if d.reported {
			p := d.pct
			h.Progress = &p
		}
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Component < out[j].Component })
	return out
}

// Holding is a component the agent owns, as foreman's replies tell.
type Holding struct {
	Component    string `json:"component"`
	CheckinsDue  bool   `json:"checkins_due" jsonschema:"foreman expects check-ins on it (building or blocked); false in review, CI or held"`
	Progress     *int   `json:"progress,omitempty" jsonschema:"the last percentage you said"`
	AutoCheckins int    `json:"auto_checkins,omitempty" jsonschema:"automatic check-ins foreman mcp said for you since your last line about it"`
	AutoStopped  bool   `json:"auto_stopped,omitempty" jsonschema:"automatic check-ins stopped: you called no tool for longer than mcp.keepalive"`
}
