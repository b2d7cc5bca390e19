package coordinator

import (
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// Shorthands for tests: one event each, with the replies as lines.

func (e *Engine) doStart(at time.Time) []string {
	return lines(e.Step(Event{Kind: KindStart, At: at}))
}

func (e *Engine) doReceive(m Message) []string { return lines(e.Step(Heard(m))) }

func (e *Engine) doAdvance(to time.Time) []string {
	return lines(e.Step(Event{Kind: KindAdvance, At: to}))
}

func (e *Engine) doRecover(at time.Time) []string {
	return lines(e.Step(Event{Kind: KindRecover, At: at}))
}

// doTick fires the earliest instant if due by to, as the shell does: it
// asks for the next deadline, then ticks at it.
func (e *Engine) doTick(to time.Time) (time.Time, []string, bool) {
	d, ok := e.NextDeadline()
	if !ok || d.After(to) {
		return time.Time{}, nil, false
	}
	return d, lines(e.Step(Event{Kind: KindTick, At: d})), true
}

// doHandle handles a command already read, without the reading (for
// benchmarks of the rules alone).
func (e *Engine) doHandle(at time.Time, sender string, cmd protocol.Command) []string {
	if !e.started {
		return nil
	}
	e.out = nil
	e.handleAt(at, sender, cmd)
	out := e.out
	e.out = nil
	return lines(out)
}

// lines is Texts, but nil for no replies, as the tests expect.
func lines(replies []Reply) []string {
	if replies == nil {
		return nil
	}
	return Texts(replies)
}
