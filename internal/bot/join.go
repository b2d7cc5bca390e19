package bot

import (
	"errors"
	"time"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/recovery"
	"github.com/agentforeman/foreman/protocol"
)

// RefusedError is foreman refusing to coordinate: the room shows something
// its journal cannot account for, and going on would mean guessing.
type RefusedError = recovery.RefusedError

// joinedRoom hands the join to the session (internal/recovery: start, or
// catch up after a restart or a reconnect), sends first what the room
// never got, and says what happened.
func (b *Bot) joinedRoom(ev agentchat.Joined) error {
	at := ev.TS
	if at.IsZero() {
		at = b.now()
	}
	b.saw(at)
	b.setHealth(func(h *Health) { h.Joined = true })
	b.log.Info().Str("channel", ev.Channel).Int("agents", len(ev.Agents)).Bool("created", ev.Created).Msg("joined the channel")
	j, err := b.sess.Join(recovery.Join{At: at, History: ev.History, Created: ev.Created, Replayed: ev.Replayed, Overlap: ev.Overlap,
		Members: ev.Agents})
	if err != nil {
		return b.refuse(err)
	}
	if j.Started {
		b.setTag()
		if j.Before > 0 {
			b.log.Info().Int("messages", j.Before).Msg("what the room said before the build started is never a command")
		}
		if j.ClaimAgain > 0 {
			b.log.Info().Int("senders", j.ClaimAgain).Msg("some claimed before foreman joined the room: the first TASKS tells them to claim again")
		}
		b.log.Info().Str("build", b.cfg.Build.Name).Str("stamp", b.sess.Tag()).Int("components", len(b.cfg.Build.Components)).
			Msg("started the build")
		return nil
	}
	if j.CaughtUp {
		if j.Found > 0 || len(j.Resend) > 0 {
			b.log.Info().Int("already_in_room", j.Found).Int("sending_again", len(j.Resend)).Bool("history_reaches_back", j.Sure).
				Msg("replies from before the restart")
		}
		lines := make([]agentchat.Line, len(j.Resend))
		for i, l := range j.Resend {
			lines[i] = wireLine(l)
		}
		b.client.Send(lines...)
	}
	if j.Reloaded {
		b.log.Info().Int("components", len(b.cfg.Build.Components)).
			Msg("the configuration changed while foreman was down: its components and roles were applied as a reload")
	}
	if j.Gap != nil {
		b.log.Warn().Time("since", j.Gap.Since).Time("until", j.Gap.Until).
			Msg("the room's history no longer reaches back to the last line foreman handled; said so in the room")
	}
	b.log.Info().Dur("away", j.Away.Round(time.Millisecond)).Int("missed_messages", j.Missed).
		Msg("back in the room: deadlines moved by the time away; caught up on what was missed")
	return nil
}

func (b *Bot) journalName() string {
	if b.opts.StorageName != "" {
		return b.opts.StorageName
	}
	if b.cfg.Journal == "" {
		return ""
	}
	return "journal " + b.cfg.Journal
}

// ownMessage is a message from this identity that this connection did not
// send (the client delivers those as they come).
func (b *Bot) ownMessage(m agentchat.Message) error {
	if err := b.sess.Hear(m); err != nil {
		return b.refuse(err)
	}
	return nil
}

// refuse says in the room, and returns, why foreman will not coordinate.
func (b *Bot) refuse(err error) error {
	var re *RefusedError
	if !errors.As(err, &re) {
		return err
	}
	b.log.Error().Msg(re.Why)
	line := protocol.Error(protocol.BuildSubject, "foreman will not coordinate here: "+re.Room).Text
	if b.saidBefore(line) {
		b.log.Info().Msg("the room shows this refusal already, from an earlier attempt; it is not said again")
		return err
	}
	b.client.Send(agentchat.Line{Text: line, Urgent: true, Plain: true})
	deadline := time.Now().Add(refusalGrace)
	for b.client.Stats().Queued > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	return err
}
