package coordinator

import (
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// Kind is what an Event is: every way the engine's state can change.
type Kind uint8

// The kinds of event. Their numbers are stored in journals: append only.
const (
	_           Kind = iota
	KindStart        // the build starts at At; Seen lists messages already in the room
	KindMessage      // Msg was heard
	KindTick         // the timers due at the earliest deadline, if it is at or before At, fire
	KindAdvance      // the clock moves to At, firing every timer due by then
	KindRecover      // the coordinator was away until At: a pause (contract section 5)
	KindReload       // the components were read again (SIGHUP)
	KindOffline      // from At, replies cannot reach the room: deadlines stop
	KindOnline       // from At, they can again: deadlines go on, later by the time offline
	KindGap          // the room's history no longer reaches back to Since: lines said until Until may be lost
	KindMembers      // the room showed Members in the channel (its member list on joining, or one joining): ids ASSIGN may name
	KindSpend        // an agent's exporter reported Spend (spend.go); At is when foreman received it
	numKinds
)

var kindNames = [numKinds]string{"", "start", "message", "tick", "advance", "recover", "reload", "offline", "online", "gap", "members", "spend"}

func (k Kind) String() string {
	if k >= numKinds {
		return "kind(?)"
	}
	return kindNames[k]
}

// Valid reports whether k is a known kind.
func (k Kind) Valid() bool { return k > 0 && k < numKinds }

// Event is one input to the engine. Step is the only way in, so a live run,
// a journal's recovery and a transcript's replay feed the engine alike.
type Event struct {
	Kind       Kind
	At         time.Time
	Msg        Message     // KindMessage; Msg.At is At
	Components []Component // KindReload: the whole new list; KindStart: the list the build starts with (a log replays with it)
	Roles      *Roles      // KindReload: the roles as now configured, nil leaves them; KindStart: the roles it starts with
	Seen       []string    // KindStart: ids of messages said before the build began, which are never commands
	Instance   string      // KindStart: names this run of the build apart from others of the same name
	ClaimAgain []string    // KindStart: senders whose CLAIM came before the bot joined; the first TASKS tells them to claim again
	Since      time.Time   // KindGap: the last line the coordinator is sure to have heard
	Until      time.Time   // KindGap: the oldest line the room still has
	Members    []Member    // KindMembers: at most MaxMembers; At moves no clock (membership says nothing about time)
	Spend      Spend       // KindSpend
}

// Heard is the event of hearing m.
func Heard(m Message) Event { return Event{Kind: KindMessage, At: m.At, Msg: m} }

// Reply is one line the engine said: the line and its parts (protocol.Reply),
// when it was said, and whether it is urgent.
type Reply struct {
	protocol.Reply
	At time.Time // the engine's clock when it said it: a timer's deadline, or the event's time
	// Urgent replies need a human soon (ESCALATE, and ERROR about the
	// build): the shell may send the message that holds one before older
	// ones, but never reorders the lines of one event.
	Urgent bool
}

// Texts returns the lines of replies, in order.
func Texts(replies []Reply) []string {
	out := make([]string, len(replies))
	for i, r := range replies {
		out[i] = r.Text
	}
	return out
}

// Step hands the engine one event and returns what it said, in order; nil
// when nothing. Before the build has started only KindStart does anything.
func (e *Engine) Step(ev Event) []Reply {
	if ev.Kind != KindStart && !e.started {
		return nil
	}
	e.out = nil
	switch ev.Kind {
	case KindStart:
		e.start(ev.At, ev.Seen, ev.Instance, ev.ClaimAgain)
	case KindMessage:
		e.receive(ev.Msg)
	case KindTick:
		e.tick(ev.At)
	case KindAdvance:
		e.fireDue(ev.At)
	case KindRecover:
		e.recover(ev.At)
	case KindReload:
		e.reload(ev.At, ev.Components, ev.Roles)
	case KindOffline:
		e.goOffline(ev.At)
	case KindOnline:
		e.goOnline(ev.At)
	case KindGap:
		e.gap(ev.At, ev.Since, ev.Until)
	case KindMembers:
		e.members(ev.Members)
	case KindSpend:
		e.spent(ev.At, ev.Spend)
	}
	out := e.out
	e.out = nil
	return out
}
