package recovery

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/node"
	"github.com/agentforeman/foreman/protocol"
)

// RefusedError is foreman refusing to coordinate: the room shows something
// its log cannot account for, and going on would mean guessing.
type RefusedError struct {
	Why  string // the whole story, for the log and the exit
	Room string // what the room is told: short enough for one reply, ending in what to do
}

func (e *RefusedError) Error() string { return e.Why }

// Join is the room letting foreman in.
type Join struct {
	At      time.Time           // the room's clock when it let foreman in
	History []agentchat.Message // its replay, oldest first, minus what this connection already delivered
	Created bool                // foreman created the channel: it had no history
	// Replayed is how many frames the room replayed, Overlap whether some
	// were ones this connection had already delivered (agentchat.Joined).
	Replayed int
	Overlap  bool
	// Members is the room's member list on joining (agentchat.Joined's
	// Agents): ids an operator may ASSIGN to before they say a word.
	Members []agentchat.Agent
}

// Joined is what a join did, for the shell to act on and to log.
type Joined struct {
	// Started: this join started the build; Before messages were in the
	// room already, and are never commands.
	Started bool
	Before  int
	// ClaimAgain is how many senders had claimed before foreman joined: the
	// first TASKS tells them to claim again.
	ClaimAgain int
	// CaughtUp: this join was the first after a restart (or a takeover).
	// Found replies were in the room's history; Resend must go to the
	// room before anything else, marked Resent where the history could
	// not vouch for them (Sure false).
	CaughtUp bool
	Found    int
	Resend   []node.Line
	Sure     bool
	// Away is the time from foreman's last event to this join: a pause.
	Away time.Duration
	// Missed messages were handled from the history; Gap, if set, was
	// said in the room: the history no longer reached back to the last
	// line handled.
	Missed int
	Gap    *coordinator.Event
	// Reloaded: the configuration changed while foreman was down; its
	// components and roles were applied as a reload.
	Reloaded bool
}

// Join starts the build on the first join, and on a later one (after a
// restart, a takeover or a reconnect) treats the time away as a pause and
// handles what the room said meanwhile, from its replayed history. It
// returns a *RefusedError when the room shows what the log cannot account
// for; the session must not go on then.
func (s *Session) Join(j Join) (Joined, error) {
	at := j.At
	s.Saw(at)
	if !s.node.Started() {
		out, err := s.startBuild(at, j.History)
		if err == nil {
			s.Members(j.Members...)
		}
		return out, err
	}
	for _, m := range j.History {
		if err := s.checkOwn(m); err != nil {
			return Joined{}, err
		}
	}
	var out Joined
	out.Away = max(at.Sub(s.node.Engine().Now()), 0)
	missed, gap := s.missed(j, at)
	heard := 0
	if s.restarted && !s.caughtUp {
		out.CaughtUp = true
		out.Found, out.Sure, out.Resend = s.resumeReplies(j.History)
		// Until its alive mark foreman was running: deadlines due by then
		// fire, but the lines said before it, which it had not handled
		// yet, first (each after the deadlines due before it), as a
		// foreman that never stopped would have. The rest is a pause.
		if alive, err := s.st.Alive(); err == nil && alive.After(s.node.Engine().Now()) && alive.Before(at) {
			for ; heard < len(missed) && missed[heard].TS.Before(alive); heard++ {
				s.node.Hear(Message(missed[heard]))
			}
			s.node.Step(coordinator.Event{Kind: coordinator.KindAdvance, At: alive})
		}
		s.node.Step(coordinator.Event{Kind: coordinator.KindRecover, At: at})
		s.reload = true // the configuration may have changed while foreman was down
	}
	if s.reload {
		s.reload = false
		out.Reloaded = s.applyConfig(at)
	}
	for _, m := range missed[heard:] {
		s.node.Hear(Message(m))
	}
	if gap != nil {
		s.node.Step(*gap)
	}
	out.Missed, out.Gap = len(missed), gap
	s.goOnline(at)
	s.joined, s.caughtUp = true, true
	s.Members(j.Members...) // who is here now: after what was said before
	return out, nil
}

// startBuild starts the build at the room's time, unless the room shows
// that this identity already coordinates a build here that this log knows
// nothing of: the log was lost, or another foreman shares the identity.
// Lines already in the room are never commands.
func (s *Session) startBuild(at time.Time, history []agentchat.Message) (Joined, error) {
	if !s.cfg.NewBuild {
		for _, m := range history {
			if m.Self && m.Stamp != nil && strings.HasPrefix(m.Stamp.Tag, "foreman ") {
				return Joined{}, &RefusedError{Why: fmt.Sprintf(
					"this room shows %q, a build coordinated by this identity (%s), but %s has no record of it: its journal was deleted, emptied or moved, or another foreman uses this identity; restore the journal, or start over with --new-build",
					m.Stamp.Tag, s.cfg.Self, s.journalName()),
					Room: fmt.Sprintf("its journal has no record of %q, which this identity coordinates here, so it left: nothing to do while that foreman runs; if it is gone, restore its journal or start over with foreman run --new-build", m.Stamp.Tag)}
			}
		}
	}
	var seen []string
	for _, m := range history {
		if m.ID != "" {
			seen = append(seen, m.ID)
		}
	}
	s.joined = true
	// The components and roles go in the log with the start: a restart
	// replays the log with these, whatever the configuration says by then.
	eng := s.cfg.Node.Engine
	roles := eng.Roles
	again := claimedBefore(eng, history)
	s.node.Step(coordinator.Event{Kind: coordinator.KindStart, At: at, Seen: seen, Instance: s.cfg.Instance(),
		Components: eng.Components, Roles: &roles, ClaimAgain: again})
	s.setTag()
	return Joined{Started: true, Before: len(history), ClaimAgain: len(again)}, nil
}

// claimedBefore returns, in the order they first spoke, the senders of the
// CLAIMs in the room before the bot joined: never commands, but each is told
// by the first TASKS to claim again, rather than wait for an answer that
// will not come (contract section 1).
func claimedBefore(eng coordinator.Config, history []agentchat.Message) []string {
	r := protocol.Reader{Mentions: eng.Mentions}
	var out []string
	for _, m := range history {
		if m.Self || m.Notice || m.From == eng.Self || eng.Rules.RequireVerified && !m.Verified || slices.Contains(out, m.From) {
			continue
		}
		read := 0
		for line := range protocol.Lines(m.Content) {
			cmd, err := r.Read(line)
			if err != nil || cmd.Verb == protocol.NoVerb {
				continue
			}
			if cmd.Verb == protocol.Claim {
				out = append(out, m.From)
				break
			}
			if read++; read == coordinator.MaxCommands {
				break
			}
		}
	}
	return out
}

func (s *Session) journalName() string {
	if s.cfg.JournalName == "" {
		return "this foreman (run without a journal)"
	}
	return s.cfg.JournalName
}

// checkOwn reads one of foreman's own messages in the room: another
// build's stamp means another foreman uses this identity here; a reply of
// this build the node never produced means the log lost entries. Either
// way foreman cannot know what it did, and stops.
func (s *Session) checkOwn(m agentchat.Message) error {
	if !m.Self || m.Stamp == nil || s.cfg.NewBuild {
		return nil
	}
	if m.Stamp.Tag != s.tag {
		return &RefusedError{Why: fmt.Sprintf(
			"another foreman with this identity (%s) coordinates %q in this room, while this one coordinates %q with %s; stop one of them, or give each its own identity",
			s.cfg.Self, m.Stamp.Tag, s.tag, s.journalName()),
			Room: fmt.Sprintf("another foreman with this identity coordinates %q here (this one: %q); stop one of them, or give each its own identity", m.Stamp.Tag, s.tag)}
	}
	for _, r := range m.Stamp.Seqs {
		if r.To > s.node.Produced() {
			return &RefusedError{Why: fmt.Sprintf(
				"the room shows reply #%d of this build, but %s ends at reply #%d: the journal lost what foreman did (restored from an old copy, or cut short); restore the latest journal, or start over with --new-build",
				r.To, s.journalName(), s.node.Produced()),
				Room: fmt.Sprintf("the room shows reply #%d of %q, but its journal ends at #%d; restore the latest journal, or start over with foreman run --new-build", r.To, s.tag, s.node.Produced())}
		}
	}
	return nil
}

// forgetOneConfirmation plants a bug for the simulator's own test: the
// first stamp that would confirm something is skipped, as if the matching
// forgot it. Only tests set it (export_test.go).
var forgetOneConfirmation bool

// resumeReplies, after a restart, confirms the replies the room's history
// shows were sent (by the stamps on foreman's messages, which survive the
// room rewriting their content), and returns the rest to send again. Those
// the history cannot vouch for, because it no longer reaches back to the
// last message the room confirmed, or to the one it had confirmed when the
// reply was produced, are marked as possibly repeated.
func (s *Session) resumeReplies(history []agentchat.Message) (found int, sure bool, resend []node.Line) {
	// The history must reach back to the last echo the log knew of, not to
	// one it holds itself: what was sent after the log's last echo and has
	// left the history is unknown, however recent the echoes it shows.
	last := s.node.LastEcho()
	forgot := false
	for _, m := range history {
		if !m.Self || m.Stamp == nil || m.Stamp.Tag != s.tag {
			continue
		}
		var rs []node.Range
		news := false
		for _, r := range m.Stamp.Seqs {
			rs = append(rs, node.Range{From: r.From, To: r.To})
			found += int(r.To - r.From + 1)
			for q := r.From; q <= r.To && !news; q++ {
				news = !s.node.Delivered(q)
			}
		}
		if forgetOneConfirmation && news && !forgot {
			forgot = true
			continue
		}
		s.node.ConfirmRanges(rs, m.ID, m.TS)
	}
	// The last echo vouches only for what was produced after it: a reply
	// produced before it may have gone out before the echoed message, from
	// this life or an earlier one whose echo never reached the log (a
	// resend the room's size limit split, a life that died mid-way), and
	// have left the history since. Each reply needs the history to reach
	// back to the echo the log held when it was produced. Replies come in
	// order, and so do their echoes: each echo is looked for once.
	vouched := ReachesBack(history, last)
	sure = vouched
	resend = s.node.Unconfirmed()
	var after node.Echo
	back := false
	for i := range resend {
		if i == 0 || resend[i].After != after {
			after, back = resend[i].After, ReachesBack(history, resend[i].After)
		}
		resend[i].Resent = !vouched || !back
		sure = sure && !resend[i].Resent
	}
	return found, sure, resend
}

// ReachesBack reports whether the history holds everything said since the
// room last confirmed one of foreman's messages: it holds that message, or
// one older. The history is the room's latest frames, without holes. One
// of the same millisecond proves nothing: the room stamps many messages
// with one time, and it may have come after.
func ReachesBack(history []agentchat.Message, last node.Echo) bool {
	if last.TS.IsZero() {
		return false
	}
	for _, m := range history {
		if m.ID != "" && m.ID == last.MsgID || m.TS.Before(last.TS) {
			return true
		}
	}
	return false
}

// missed returns the history's messages after the last one handled. When
// the history no longer reaches back to it (the room keeps only its last
// few frames, and forgets them all when restarted), lines may be lost:
// missed returns what is left and the gap to tell the room about.
func (s *Session) missed(j Join, at time.Time) ([]agentchat.Message, *coordinator.Event) {
	history := j.History
	var msgs []agentchat.Message
	for _, m := range history {
		if !m.Self && !m.Notice {
			msgs = append(msgs, m)
		}
	}
	lastID, lastAt := s.node.LastMessage()
	if lastID != "" {
		for i, m := range msgs {
			if m.ID == lastID {
				return msgs[i+1:], nil
			}
		}
	} else {
		lastAt, _ = s.node.Engine().StartedAt()
	}
	var out []agentchat.Message
	for _, m := range msgs {
		if !m.TS.Before(lastAt) {
			out = append(out, m)
		}
	}
	switch {
	case len(history) > 0 && history[0].TS.Before(lastAt):
		// The history reaches back past the last line handled. A line of
		// the very same millisecond proves nothing: the room stamps many
		// lines with one time, and lines between may have left.
		return out, nil
	case j.Overlap:
		// The replay holds what this connection delivered before it
		// dropped, and everything since: the room lost nothing.
		return out, nil
	}
	// A replay shorter than the room keeps proves nothing by itself, nor do
	// this build's own messages in it: the room may have been restarted,
	// and its channel made again (by an earlier life of this foreman that
	// died before it could say so, and then sent its replies again).
	until := at
	if len(history) > 0 {
		until = history[0].TS
	}
	return out, &coordinator.Event{Kind: coordinator.KindGap, At: at, Since: lastAt, Until: until}
}

// applyConfig, after a restart, applies the configuration as it is now when
// its components or roles are not the ones the log ended with: as a
// reload, so that the log still replays exactly.
func (s *Session) applyConfig(at time.Time) bool {
	want := s.cfg.Node.Engine
	comps, roles := s.node.Engine().Configured()
	if slices.EqualFunc(comps, want.Components, func(a, b coordinator.Component) bool {
		return a.Name == b.Name && slices.Equal(a.Deps, b.Deps)
	}) && sameRoles(roles, want.Roles) {
		return false
	}
	r := want.Roles
	s.node.Step(coordinator.Event{Kind: coordinator.KindReload, At: at, Components: want.Components, Roles: &r})
	return true
}

func sameRoles(a, b coordinator.Roles) bool {
	return slices.Equal(a.Operators, b.Operators) && slices.Equal(a.Auditors, b.Auditors) &&
		slices.Equal(a.CI, b.CI) && slices.Equal(a.Merger, b.Merger)
}

// Reload is SIGHUP: the configuration's components and roles, read again.
// In the room they apply at once, after the deadlines due by at; out of it
// (before the first join after a restart, or cut off) they wait for the
// next join: a deadline fired now would count foreman's time away against
// a builder. It reports whether they applied now.
func (s *Session) Reload(at time.Time, comps []coordinator.Component, roles coordinator.Roles) bool {
	if !s.node.Started() {
		return false // the build starts with the configuration as it is then
	}
	s.cfg.Node.Engine.Components, s.cfg.Node.Engine.Roles = comps, roles
	if !s.joined {
		s.reload = true
		return false
	}
	s.node.Wake(at)
	s.node.Step(coordinator.Event{Kind: coordinator.KindReload, At: at, Components: comps, Roles: &roles})
	return true
}

// Spend hands the engine what an agent's exporter reported, received at
// at (issue 47), journaled like any event. It refuses (false) before the
// build has started and while foreman is out of the room or catching up:
// the exporter sends it again, and the engine counts it then, after what
// the room said meanwhile.
func (s *Session) Spend(at time.Time, sp coordinator.Spend) bool {
	if !s.node.Started() || !s.joined {
		return false
	}
	// The journal keeps milliseconds: the live engine is handed what a
	// recovery will read back, so both place the spend alike.
	at, sp.At, sp.Start = at.Truncate(time.Millisecond), sp.At.Truncate(time.Millisecond), sp.Start.Truncate(time.Millisecond)
	s.node.Wake(at)
	s.node.Step(coordinator.Event{Kind: coordinator.KindSpend, At: at, Spend: sp})
	return true
}
