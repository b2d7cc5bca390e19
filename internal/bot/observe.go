package bot

import (
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/protocol"
)

// observe sees every event the engine handles live, with what it said: it
// records the session and passes both on to the board.
func (b *Bot) observe(ev *coordinator.Event, said []coordinator.Reply) {
	if b.rec != nil {
		b.rec.event(ev, said, b.node.Engine().Now())
	}
	if b.opts.Observe != nil {
		b.opts.Observe(ev, said)
	}
}

// logSaid logs, in words, a line the room has confirmed.
func (b *Bot) logSaid(line string) {
	switch verb := protocol.VerbOf(line); verb {
	case protocol.ReplyEscalate:
		b.log.Warn().Str("said", line).Msg("a human must decide")
	case protocol.ReplyError:
		b.log.Info().Str("said", line).Msg("answered a malformed line, or reported a fault")
	case protocol.ReplyStatus:
		b.log.Debug().Str("said", line).Msg("status")
	default:
		b.log.Info().Str("said", line).Msg(describe[verb])
	}
}

var describe = map[protocol.ReplyVerb]string{
	protocol.ReplyTasks:     "announced what can be claimed",
	protocol.ReplyAck:       "assigned a component",
	protocol.ReplyReject:    "refused a line",
	protocol.ReplyTimeout:   "a builder missed its check-ins; the component is free again",
	protocol.ReplyRetry:     "a builder used all its audit attempts; the component goes to another",
	protocol.ReplyReview:    "sent a component to audit",
	protocol.ReplyFix:       "sent a component back to its builder",
	protocol.ReplyWait:      "a component waits on another",
	protocol.ReplyUnblocked: "a component may go on",
	protocol.ReplyMerged:    "merged a component",
	protocol.ReplyComplete:  "the build is complete",
	protocol.ReplyOK:        "carried out an operator command",
}
