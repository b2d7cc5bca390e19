package coordinator

import (
	"fmt"
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// Bounds on the work and replies one sender can cause. The room is shared
// with agents that may be broken or hostile: one message of 131,000
// malformed lines once held up every honest ACK for 17 s.
const (
	// MaxCommands is how many protocol lines of one message are read; the
	// rest are refused with the message's one ERROR.
	MaxCommands = 100
	// BoardEvery is how often the whole board may be listed in the room
	// when it is longer than MaxCommands lines; other asks in between are
	// pointed at the listing already in the room.
	BoardEvery = 10 * time.Second
	// maxClaimAgain is how many of those whose CLAIM came before the bot
	// joined the engine keeps for its first TASKS (which names a few of
	// them and counts the rest): a history is a bounded replay, but the
	// engine does not rely on that.
	maxClaimAgain = 1000
)

// lineErrors gathers what was wrong with one message's lines, so that the
// sender gets at most one ERROR per message, in the place of the first.
type lineErrors struct {
	sender string
	at     int    // index in the engine's out of the ERROR said; -1 if none yet
	first  string // what was wrong with the first malformed line
	count  int    // malformed lines
	cut    bool   // lines after the MaxCommands-th protocol line were not read
}

func newLineErrors(sender string) lineErrors { return lineErrors{sender: sender, at: -1} }

// malformed notes a malformed line: the first is answered at once.
func (l *lineErrors) malformed(e *Engine, err error) {
	l.count++
	if l.count == 1 {
		l.first, l.at = err.Error(), len(e.out)
		e.say(protocol.Error(l.sender, l.first))
	}
}

// finish rewrites the message's one ERROR to say everything, counts first
// (the bound on a reply cuts the end of the text, never the counts).
func (l *lineErrors) finish(e *Engine) {
	if l.count <= 1 && !l.cut {
		return
	}
	text := ""
	if l.cut {
		text = fmt.Sprintf("only the first %d commands of a message are read; send the rest again in another message", MaxCommands)
	}
	if l.count > 1 {
		text = join(text, fmt.Sprintf("%d malformed lines in this message, the first: %s", l.count, l.first))
	} else if l.count == 1 {
		text = join(text, l.first)
	}
	r := protocol.Error(l.sender, text)
	if l.at < 0 {
		e.say(r)
		return
	}
	e.out[l.at].Reply = r
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// boardAllowed reports whether the whole board may be listed now, and
// says why not to the one who asked when it may not.
func (e *Engine) boardAllowed(agent string) bool {
	if len(e.comps) <= MaxCommands || e.boardAt.IsZero() || !e.now.Before(e.boardAt.Add(BoardEvery)) {
		e.boardAt = e.now
		return true
	}
	e.say(protocol.Error(agent, fmt.Sprintf(
		"the whole board (%d components) was listed at %s (build time), less than %s ago; ask STATUS <component>, or see the board (foreman status)",
		len(e.comps), e.buildTime(e.boardAt), BoardEvery)))
	return false
}
