package coordinator

import (
	"fmt"
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// The build's deadlines stop for two reasons: an operator's PAUSE, and the
// shell's word that replies cannot reach the room (offline: lurking, or
// cut off). Either freezes every timer; when the last reason ends, every
// deadline moves later by the time frozen, so nobody is timed out for a
// time they could not be heard or answered (contract section 5). Both go
// through here so that the two never count the same time twice.

func (e *Engine) frozen() bool { return e.paused || e.offline }

// freeze sets one reason; the clock of the freeze starts with the first.
func (e *Engine) freeze(reason *bool) {
	if !e.frozen() {
		e.frozenAt = e.now
	}
	*reason = true
}

// thaw clears one reason; with none left, the deadlines move on.
func (e *Engine) thaw(reason *bool) {
	*reason = false
	if !e.frozen() {
		e.timers.shift(e.now.Sub(e.frozenAt))
	}
}

// base is when a deadline armed now starts counting: while frozen, from the
// freeze's start, so that the thaw's shift gives it its whole length.
func (e *Engine) base() time.Time {
	if e.frozen() {
		return e.frozenAt
	}
	return e.now
}

// goOffline: from at, what the engine says cannot reach the room. Deadlines
// due before then fire first: the room could still hear those.
func (e *Engine) goOffline(at time.Time) {
	if e.offline {
		return
	}
	e.fireDue(at)
	e.freeze(&e.offline)
}

// goOnline: from at, replies reach the room again.
func (e *Engine) goOnline(at time.Time) {
	if !e.offline {
		return
	}
	if at.After(e.now) {
		e.now = at
	}
	e.thaw(&e.offline)
}

// gap says in the room that lines may have been lost: the room's history
// no longer reaches back to the last line the coordinator is sure it
// heard (since), so lines said between then and until cannot be read. It
// refuses to guess what they were, and asks for them again.
func (e *Engine) gap(at, since, until time.Time) {
	e.fireDue(at)
	e.say(protocol.Error(protocol.BuildSubject, fmt.Sprintf(
		"foreman may have missed lines said between %s and %s (build time): the room's history no longer reaches back that far; if you said anything then, say it again",
		e.buildTime(since), e.buildTime(until))))
}

// buildTime formats t as time since the build started, HH:MM:SS, as
// transcripts and the board do.
func (e *Engine) buildTime(t time.Time) string {
	d := t.Sub(e.startAt).Round(time.Second)
	if d < 0 {
		d = 0
	}
	return fmt.Sprintf("%02d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
}
