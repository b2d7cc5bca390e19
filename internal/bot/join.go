package bot

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/node"
	"github.com/agentforeman/foreman/protocol"
)

// RefusedError is foreman refusing to coordinate: the room shows something
// its journal cannot account for, and going on would mean guessing.
type RefusedError struct {
	Why  string // the whole story, for the log and the exit
	Room string // what the room is told: short enough for one reply, ending in what to do
}

func (e *RefusedError) Error() string { return e.Why }

// joinedRoom starts the build on the first join, and on a later one (after
// a restart or a reconnect) treats the time away as a pause and handles what
// the room said meanwhile, from its replayed history.
func (b *Bot) joinedRoom(ev agentchat.Joined) error {
	at := ev.TS
	if at.IsZero() {
		at = b.now()
	}
	b.room.saw(at)
	b.setHealth(func(h *Health) { h.Joined = true })
	b.log.Info().Str("channel", ev.Channel).Int("agents", len(ev.Agents)).Bool("created", ev.Created).Msg("joined the channel")
	if !b.node.Started() {
		return b.startBuild(at, ev.History)
	}
	if err := b.checkOwnHistory(ev.History); err != nil {
		return b.refuse(err)
	}
	if b.restarted && !b.caughtUp {
		b.resumeReplies(ev.History)
		if alive, err := b.st.Alive(); err == nil && alive.After(b.node.Engine().Now()) && alive.Before(at) {
			b.node.Step(coordinator.Event{Kind: coordinator.KindAdvance, At: alive})
		}
		b.node.Step(coordinator.Event{Kind: coordinator.KindRecover, At: at})
	}
	away := at.Sub(b.node.Engine().Now())
	missed, gap := b.missed(ev, at)
	for _, m := range missed {
		b.node.Hear(message(m))
	}
	if gap != nil {
		b.node.Step(*gap)
		b.log.Warn().Time("since", gap.Since).Time("until", gap.Until).
			Msg("the room's history no longer reaches back to the last line foreman handled; said so in the room")
	}
	b.goOnline(at)
	b.joined, b.caughtUp = true, true
	b.log.Info().Dur("away", max(away, 0).Round(time.Millisecond)).Int("missed_messages", len(missed)).
		Msg("back in the room: deadlines moved by the time away; caught up on what was missed")
	return nil
}

// startBuild starts the build at the room's time, unless the room shows
// that this identity already coordinates a build here that this journal
// knows nothing of: the journal was lost, or another foreman shares the
// identity. Lines already in the room are never commands.
func (b *Bot) startBuild(at time.Time, history []agentchat.Message) error {
	if !b.opts.NewBuild {
		for _, m := range history {
			if m.Self && m.Stamp != nil && strings.HasPrefix(m.Stamp.Tag, "foreman ") {
				return b.refuse(&RefusedError{Why: fmt.Sprintf(
					"this room shows %q, a build coordinated by this identity (%s), but %s has no record of it: its journal was deleted, emptied or moved, or another foreman uses this identity; restore the journal, or start over with --new-build",
					m.Stamp.Tag, b.AgentID(), b.journalName()),
					Room: fmt.Sprintf("its journal has no record of %q, which this identity coordinates here, so it left: nothing to do while that foreman runs; if it is gone, restore its journal or start over with foreman run --new-build", m.Stamp.Tag)})
			}
		}
	}
	var seen []string
	for _, m := range history {
		if m.ID != "" {
			seen = append(seen, m.ID)
		}
	}
	if n := len(history); n > 0 {
		b.log.Info().Int("messages", n).Msg("what the room said before the build started is never a command")
	}
	b.joined = true
	b.node.Step(coordinator.Event{Kind: coordinator.KindStart, At: at, Seen: seen, Instance: randomInstance()})
	b.setTag()
	b.log.Info().Str("build", b.cfg.Build.Name).Str("stamp", b.tag).Int("components", len(b.cfg.Build.Components)).
		Msg("started the build")
	return nil
}

func (b *Bot) journalName() string {
	if b.cfg.Journal == "" {
		return "this foreman (run without a journal)"
	}
	return "journal " + b.cfg.Journal
}

// checkOwnHistory reads foreman's own earlier messages in the room: another
// build's stamp means another foreman uses this identity here; a reply of
// this build the node never produced means the journal lost entries.
// Either way foreman cannot know what it did, and stops.
func (b *Bot) checkOwnHistory(history []agentchat.Message) error {
	for _, m := range history {
		if err := b.checkOwn(m); err != nil {
			return err
		}
	}
	return nil
}

func (b *Bot) checkOwn(m agentchat.Message) error {
	if !m.Self || m.Stamp == nil || b.opts.NewBuild {
		return nil
	}
	if m.Stamp.Tag != b.tag {
		return &RefusedError{Why: fmt.Sprintf(
			"another foreman with this identity (%s) coordinates %q in this room, while this one coordinates %q with %s; stop one of them, or give each its own identity",
			b.AgentID(), m.Stamp.Tag, b.tag, b.journalName()),
			Room: fmt.Sprintf("another foreman with this identity coordinates %q here (this one: %q); stop one of them, or give each its own identity", m.Stamp.Tag, b.tag)}
	}
	for _, r := range m.Stamp.Seqs {
		if r.To > b.node.Produced() {
			return &RefusedError{Why: fmt.Sprintf(
				"the room shows reply #%d of this build, but %s ends at reply #%d: the journal lost what foreman did (restored from an old copy, or cut short); restore the latest journal, or start over with --new-build",
				r.To, b.journalName(), b.node.Produced()),
				Room: fmt.Sprintf("the room shows reply #%d of %q, but its journal ends at #%d; restore the latest journal, or start over with foreman run --new-build", r.To, b.tag, b.node.Produced())}
		}
	}
	return nil
}

// ownMessage is a message from this identity that this connection did not
// send (the client delivers those as they come).
func (b *Bot) ownMessage(m agentchat.Message) error {
	if err := b.checkOwn(m); err != nil {
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

// resumeReplies, after a restart, confirms the replies the room's history
// shows were sent (by the stamps on foreman's messages, which survive the
// room rewriting their content), and queues the rest again. Those the
// history cannot vouch for, because it no longer reaches back to the last
// message the room confirmed, go out marked as possibly repeated.
func (b *Bot) resumeReplies(history []agentchat.Message) {
	found := 0
	for _, m := range history {
		if !m.Self || m.Stamp == nil || m.Stamp.Tag != b.tag {
			continue
		}
		var rs []node.Range
		for _, r := range m.Stamp.Seqs {
			rs = append(rs, node.Range{From: r.From, To: r.To})
			found += int(r.To - r.From + 1)
		}
		b.node.ConfirmRanges(rs, m.ID, m.TS)
	}
	sure := reachesBack(history, b.node.LastEcho())
	pending := b.node.Unconfirmed()
	if found > 0 || len(pending) > 0 {
		b.log.Info().Int("already_in_room", found).Int("sending_again", len(pending)).Bool("history_reaches_back", sure).
			Msg("replies from before the restart")
	}
	lines := make([]agentchat.Line, len(pending))
	for i, l := range pending {
		l.Resent = !sure
		lines[i] = wireLine(l)
	}
	b.client.Send(lines...)
}

// reachesBack reports whether the history holds everything said since the
// room last confirmed one of foreman's messages: it holds that message, or
// one no newer. The history is the room's latest frames, without holes.
func reachesBack(history []agentchat.Message, last node.Echo) bool {
	if last.TS.IsZero() {
		return false
	}
	for _, m := range history {
		if m.ID != "" && m.ID == last.MsgID || !m.TS.After(last.TS) {
			return true
		}
	}
	return false
}

// missed returns the history's messages after the last one handled. When
// the history no longer reaches back to it (the room keeps only its last
// few frames, and forgets them all when restarted), lines may be lost:
// missed returns what is left and the gap to tell the room about.
func (b *Bot) missed(ev agentchat.Joined, at time.Time) ([]agentchat.Message, *coordinator.Event) {
	history := ev.History
	var msgs []agentchat.Message
	for _, m := range history {
		if !m.Self && !m.Notice {
			msgs = append(msgs, m)
		}
	}
	lastID, lastAt := b.node.LastMessage()
	if lastID != "" {
		for i, m := range msgs {
			if m.ID == lastID {
				return msgs[i+1:], nil
			}
		}
	} else {
		lastAt, _ = b.node.Engine().StartedAt()
	}
	var out []agentchat.Message
	for _, m := range msgs {
		if !m.TS.Before(lastAt) {
			out = append(out, m)
		}
	}
	switch {
	case len(history) > 0 && !history[0].TS.After(lastAt):
		return out, nil // the history reaches back past the last line handled
	case !ev.Created && len(history) < b.cfg.Server.History:
		return out, nil // the room dropped nothing: it keeps more than it has
	}
	until := at
	if len(history) > 0 {
		until = history[0].TS
	}
	return out, &coordinator.Event{Kind: coordinator.KindGap, At: at, Since: lastAt, Until: until}
}
