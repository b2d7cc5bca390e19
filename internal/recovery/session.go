// Package recovery is foreman's standing in the room across connections,
// restarts and takeovers: the one place that decides, whenever foreman
// joins the room, what it must do before it coordinates again. It is
// driven by the live bot (internal/bot) and by the fault simulator
// (internal/tooling/vopr) alike, so what the simulator proves holds for
// the bot.
//
// A Session is one life of foreman on a log. Open reads the log back
// through internal/node (a first start, a restart, or a takeover: a
// takeover is a restart on another machine whose Storage is the same log).
// Join then starts the build, or, after a restart, matches foreman's own
// stamped messages in the room's replayed history against the replies the
// log says were produced, counts the time away as a pause, handles what the
// room said meanwhile, once, and says in the room when its history has a
// gap. Whatever the room shows that the log cannot account for (another
// build of this identity, a reply the log never produced) is a refusal:
// foreman stops rather than guess.
//
// The Session has no goroutines, no I/O of its own but its Storage, and no
// clock but the times it is handed.
//
// A shell drives it so: Open; on the room's events, Join (then send
// Joined.Resend before anything else), Hear, Delivered, Clock, Members
// (AGENT_JOINED), Disconnected; Reload on SIGHUP; after each batch of
// events, Commit, and only then send what it returned; now and then save
// AliveMark with Storage.SaveAlive. A takeover (a standby that takes over from a foreman
// that stopped) is the same sequence on another machine: Open on a Storage
// holding the same log (the old foreman must no longer append to it), then
// Join on a connection with the same identity, which displaces the old
// one. The first Join catches up exactly as after a restart: the old
// foreman's stamped messages confirm what it sent, its time away is a
// pause, and what the log cannot account for is refused.
package recovery

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/node"
)

// Config configures a Session.
type Config struct {
	// Node is the engine and its log: Storage holds the log (nil: memory).
	Node node.Config
	// Build names the build in the stamp on every message.
	Build string
	// History is how many frames the room replays on a join (server.history):
	// a shorter replay proves that the room dropped nothing.
	History int
	// NewBuild starts a build even when the room shows that this identity
	// coordinates another there, whose log this is not.
	NewBuild bool
	// JournalName names the log in refusals ("journal PATH"); "" for a
	// foreman run without one.
	JournalName string
	// Self is foreman's sender id, for refusals.
	Self string
	// Instance names a new run of the build; nil: six random hex digits.
	Instance func() string
}

// Session is foreman in the room across reconnects, from one start of a
// process (or one takeover) to its end. It is not safe for concurrent use.
type Session struct {
	cfg  Config
	node *node.Node
	st   node.Storage
	tag  string

	restarted bool // the build began before this session: the first join catches up
	caughtUp  bool
	joined    bool
	offline   bool      // the engine knows its replies cannot reach the room
	reload    bool      // the configuration was read again while out of the room
	roomTS    time.Time // the room's latest timestamp seen
}

// Open reads the log back from cfg.Node.Storage and prepares the session.
// When the log holds a build, the session is a restart (or a takeover): its
// first Join catches up.
func Open(cfg Config) (*Session, error) {
	if cfg.Node.Storage == nil {
		cfg.Node.Storage = node.NewMemoryStorage()
	}
	if cfg.Instance == nil {
		cfg.Instance = randomInstance
	}
	n, err := node.Open(cfg.Node)
	if err != nil {
		return nil, err
	}
	s := &Session{cfg: cfg, node: n, st: cfg.Node.Storage}
	s.restarted = n.Started()
	s.offline = n.Engine().Offline()
	if s.restarted {
		s.setTag()
	}
	return s, nil
}

// Node is the node the session drives; the shell steps it too (reloads).
func (s *Session) Node() *node.Node { return s.node }

// Storage is the log.
func (s *Session) Storage() node.Storage { return s.st }

// Tag is the stamp's tag of this run of the build ("foreman <build>/<instance>");
// "" before the build has started.
func (s *Session) Tag() string { return s.tag }

// Restarted reports whether the log held the build when the session opened.
func (s *Session) Restarted() bool { return s.restarted }

// InRoom reports whether foreman is in the room and caught up: messages
// are commands only then.
func (s *Session) InRoom() bool { return s.joined }

// Offline reports whether the engine holds its deadlines because its
// replies cannot reach the room.
func (s *Session) Offline() bool { return s.offline }

// RoomTime is the room's latest timestamp the session has seen.
func (s *Session) RoomTime() time.Time { return s.roomTS }

// AliveMark is what the shell saves now and then as the time foreman was
// last running (node.Storage.SaveAlive), so that a restart can tell the
// time it was away from time it merely idled: the room's latest timestamp,
// the last time foreman surely was in the room. Not an estimate of the
// room's clock: a foreman stopped for a while, whose connection was dropped
// meanwhile, would vouch for time it was already out of the room, and a
// restart would count that time against builders. Zero (save nothing) when
// foreman is not in the room.
func (s *Session) AliveMark() time.Time {
	if !s.joined {
		return time.Time{}
	}
	return s.roomTS
}

// Saw notes a timestamp the room sent: the last time the room was heard
// from, which is when foreman goes offline if the connection drops.
func (s *Session) Saw(ts time.Time) {
	if ts.After(s.roomTS) {
		s.roomTS = ts
	}
}

func (s *Session) setTag() {
	s.tag = StampTag(s.cfg.Build, s.node.Engine().Instance())
}

// StampTag is "foreman <build>/<instance>", with whatever a stamp cannot
// hold made plain.
func StampTag(build, instance string) string {
	clean := strings.Map(func(r rune) rune {
		if r < 0x21 || r > 0x7e || r == '[' || r == ']' || r == '#' {
			return '_'
		}
		return r
	}, build)
	return "foreman " + clean + "/" + instance
}

// Hear handles a live message from the room. Foreman's own messages that
// this connection did not send are checked against the log (another
// foreman with this identity refuses); notices, and anything before the
// session has joined, are never commands.
func (s *Session) Hear(m agentchat.Message) error {
	s.Saw(m.TS)
	if m.Self {
		return s.checkOwn(m)
	}
	if m.Notice || !s.joined {
		return nil
	}
	cm := Message(m)
	// A live message came after the join, so after the build started,
	// whatever its timestamp: on a room that sends no time with JOINED the
	// start is foreman's clock when it read the replay, and a CLAIM the
	// room stamped a moment earlier, while foreman read, is still an
	// answerable CLAIM (contract section 1), not one from before the build.
	if start, ok := s.node.Engine().StartedAt(); ok && cm.At.Before(start) {
		cm.At = start
	}
	s.node.Hear(cm)
	return nil
}

// Members is the room showing who is in the channel: its member list on
// joining (Join does this), or one member joining (AGENT_JOINED). Those the
// engine does not know yet, or knows by another name, become an operator's
// to name (coordinator.KindMembers), journaled like any event, in events of
// at most coordinator.MaxMembers; a list the engine knows already costs no
// journal entry. Leaving changes nothing: a member who left stays one an
// operator may name, as a sender who spoke does.
func (s *Session) Members(agents ...agentchat.Agent) {
	if !s.joined || len(agents) == 0 {
		return
	}
	ms := make([]coordinator.Member, len(agents))
	for i, a := range agents {
		ms[i] = coordinator.Member{ID: a.ID, Name: a.Name, Verified: a.Verified}
	}
	ms = s.node.Engine().NewMembers(ms)
	for len(ms) > 0 {
		n := min(len(ms), coordinator.MaxMembers)
		s.node.Step(coordinator.Event{Kind: coordinator.KindMembers, At: s.roomTS, Members: ms[:n:n]})
		ms = ms[n:]
	}
}

// Message is the engine's form of a room message.
func Message(m agentchat.Message) coordinator.Message {
	return coordinator.Message{ID: m.ID, From: m.From, Name: m.FromName, Verified: m.Verified, At: m.TS, Content: m.Content}
}

// Delivered records that the room has the replies d carried: logged like an
// event, so that a restart does not send them again. Replies reach the room
// again from then.
func (s *Session) Delivered(d agentchat.Delivered) {
	s.Saw(d.TS)
	seqs := d.Seqs[:0:0]
	for _, n := range d.Seqs {
		if n != 0 { // 0: a notice (agentchat.Line.Plain), not a reply of the engine's
			seqs = append(seqs, n)
		}
	}
	s.node.Confirm(seqs, d.MsgID, d.TS)
	s.goOnline(d.TS)
}

// Clock is the room's clock read after every message the room had sent
// before it: the deadlines due by then fire.
func (s *Session) Clock(ts time.Time) {
	s.Saw(ts)
	if s.joined {
		// Every line stamped before this reading has arrived; one stamped
		// in its very millisecond may still follow it.
		s.node.Wake(ts.Add(-time.Millisecond))
	}
}

// Disconnected: the connection dropped. Deadlines stop from the last time
// the room was heard from, until foreman is back.
func (s *Session) Disconnected() {
	s.goOffline()
	s.joined = false
}

// Muted: the room refuses to let foreman send (a stock server's lurk mode).
// Deadlines stop until a reply gets through.
func (s *Session) Muted() { s.goOffline() }

func (s *Session) goOffline() {
	if s.offline || !s.node.Started() {
		return
	}
	s.offline = true
	s.node.Step(coordinator.Event{Kind: coordinator.KindOffline, At: s.roomTS})
}

func (s *Session) goOnline(at time.Time) {
	if !s.offline {
		return
	}
	s.offline = false
	s.node.Step(coordinator.Event{Kind: coordinator.KindOnline, At: at})
}

// Commit persists what the node did since the last commit and hands back
// what to do now: send rd.Messages, only after Commit returned (a crash in
// between would otherwise lose what the room was told), then save
// rd.Snapshot if there is one. On an error nothing may be sent.
func (s *Session) Commit() (node.Ready, error) {
	rd := s.node.Ready()
	if err := s.st.Append(rd.Entries); err != nil {
		return node.Ready{Entries: rd.Entries}, err
	}
	return rd, nil
}

// randomInstance names a new run of a build: six hex digits, enough to
// tell apart the runs of one build name in one room.
func randomInstance() string {
	var buf [3]byte
	if _, err := rand.Read(buf[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(buf[:])
}
