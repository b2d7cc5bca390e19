package bot

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/protocol"
)

// observe sees every event the engine handles live, with what it said: it
// records the session and passes both on to the board.
func (b *Bot) observe(ev *coordinator.Event, said []coordinator.Reply) {
	if b.rec != nil {
		b.recording.do(func() { b.rec.event(ev, said, b.node.Engine().Now()) })
	}
	if b.opts.Observe != nil {
		b.opts.Observe(ev, said)
	}
}

// observer is the boundary around what watches the build (the board,
// metrics, the recording): a panic in one is contained where it happens,
// logged with its stack, and that observer is turned off; the build goes
// on. An observer never holds the coordinator's fate. Observers are called
// from the bot's goroutine only.
type observer struct {
	name string
	log  zerolog.Logger
	off  bool
}

func (o *observer) do(f func()) {
	if o.off {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			o.off = true
			o.log.Error().Str("observer", o.name).Str("panic", fmt.Sprint(v)).Str("stack", string(debug.Stack())).
				Msg("an observer of the build panicked: it is turned off, and the build goes on")
		}
	}()
	f()
}

// guardObservers puts each observer the options name behind its boundary.
func (b *Bot) guardObservers() {
	b.recording = &observer{name: "the recording (record:)", log: b.log}
	if f := b.opts.Observe; f != nil {
		o := &observer{name: "Observe (the board, metrics)", log: b.log}
		b.opts.Observe = func(ev *coordinator.Event, said []coordinator.Reply) { o.do(func() { f(ev, said) }) }
	}
	if f := b.opts.Named; f != nil {
		o := &observer{name: "Named", log: b.log}
		b.opts.Named = func(id, name string) { o.do(func() { f(id, name) }) }
	}
	if f := b.opts.Members; f != nil {
		o := &observer{name: "Members", log: b.log}
		b.opts.Members = func(ev agentchat.Event) { o.do(func() { f(ev) }) }
	}
	if f := b.opts.Handled; f != nil {
		o := &observer{name: "Handled", log: b.log}
		b.opts.Handled = func(d time.Duration, events int) { o.do(func() { f(d, events) }) }
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
