package recovery

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/node"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func engine(comps ...string) coordinator.Config {
	cfg := coordinator.Config{Build: "shop", Self: "@foreman", Rules: coordinator.DefaultRules()}
	for _, c := range comps {
		cfg.Components = append(cfg.Components, coordinator.Component{Name: c})
	}
	return cfg
}

func open(t *testing.T, st node.Storage, eng coordinator.Config) *Session {
	t.Helper()
	s, err := Open(Config{Node: node.Config{Engine: eng, Storage: st, SnapshotEvery: -1}, Build: "shop", History: 20,
		Instance: func() string { return "abc123" }})
	require.NoError(t, err)
	return s
}

func commit(t *testing.T, s *Session) node.Ready {
	t.Helper()
	rd, err := s.Commit()
	require.NoError(t, err)
	return rd
}

func msg(id, from, text string, sec int) agentchat.Message {
	return agentchat.Message{ID: id, From: from, Content: text, TS: t0.Add(time.Duration(sec) * time.Second)}
}

// A restart after the configuration changed (a component added, the
// config edited and foreman restarted before any snapshot) replays its log
// with the components the build started with, so that every reply keeps
// its number; the change is applied afterwards, as a reload. Found by the
// simulator: replayed with the new list, the start's TASKS already named
// the new component, the reload's TASKS was never said, and every later
// reply was numbered one lower than the room had it.
func TestRestartWithAChangedConfigKeepsTheNumbers(t *testing.T) {
	st := node.NewMemoryStorage()
	s := open(t, st, engine("db", "api"))
	_, err := s.Join(Join{At: t0, Created: true})
	require.NoError(t, err)
	require.NoError(t, s.Hear(msg("m1", "@b", "CLAIM db", 1)))
	rd := commit(t, s)
	require.Equal(t, []string{"TASKS db api", "ACK db @b"}, lineTexts(rd.Messages))

	again := open(t, st, engine("db", "api", "web"))
	assert.Equal(t, uint64(2), again.Node().Produced(), "the log replays as it was said")
	j, err := again.Join(Join{At: t0.Add(time.Minute), History: []agentchat.Message{msg("m1", "@b", "CLAIM db", 1)}, Replayed: 1})
	require.NoError(t, err)
	assert.True(t, j.Reloaded)
	rd = commit(t, again)
	assert.Equal(t, []string{"TASKS api web"}, lineTexts(rd.Messages))
	assert.Equal(t, uint64(3), rd.Messages[0].Seq)

	third := open(t, st, engine("db", "api", "web"))
	assert.Equal(t, uint64(3), third.Node().Produced())
	j, err = third.Join(Join{At: t0.Add(2 * time.Minute), History: []agentchat.Message{msg("m1", "@b", "CLAIM db", 1)}, Replayed: 1})
	require.NoError(t, err)
	assert.False(t, j.Reloaded, "the log holds the reload now")
}

func lineTexts(ls []node.Line) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Text
	}
	return out
}

func own(s *Session, id string, sec int, seqs ...uint64) agentchat.Message {
	st := agentchat.Stamp{Tag: s.Tag()}
	for _, q := range seqs {
		st.Seqs = append(st.Seqs, agentchat.SeqRange{From: q, To: q})
	}
	return agentchat.Message{ID: id, From: "@foreman", Self: true, Stamp: &st, Content: "...\n" + st.String(),
		TS: t0.Add(time.Duration(sec) * time.Second)}
}

// After a restart, replies the history does not show go out again marked
// "may repeat" unless the history reaches back to the last echo the log
// knew of. An echo the history itself shows proves nothing about what was
// sent before it and has left the history. (Found by the simulator, seed
// 434 of its first runs: #38 was confirmed by an echo that never reached
// the log, the history of 3 frames showed only a later message, and #38
// went out again unmarked.)
func TestResentUnlessTheHistoryReachesBackToTheLogsEcho(t *testing.T) {
	st := node.NewMemoryStorage()
	s := open(t, st, engine("db", "api", "web"))
	_, err := s.Join(Join{At: t0, Created: true})
	require.NoError(t, err)
	require.NoError(t, s.Hear(msg("m1", "@a", "CLAIM db", 1)))
	require.NoError(t, s.Hear(msg("m2", "@b", "CLAIM db", 2)))
	rd := commit(t, s)
	require.Len(t, rd.Messages, 3) // TASKS, ACK, REJECT
	s.Delivered(agentchat.Delivered{Seqs: []uint64{1}, MsgID: "e1", TS: t0.Add(3 * time.Second)})
	commit(t, s)

	again := open(t, st, engine("db", "api", "web"))
	// #2 went out and left the history; only #3's later message is there.
	j, err := again.Join(Join{At: t0.Add(time.Minute), Replayed: 3, History: []agentchat.Message{
		own(again, "e3", 20, 3), msg("m3", "@c", "chat", 21), msg("m4", "@c", "chat", 22)}})
	require.NoError(t, err)
	assert.Equal(t, 1, j.Found)
	assert.False(t, j.Sure)
	require.Len(t, j.Resend, 1)
	assert.Equal(t, uint64(2), j.Resend[0].Seq)
	assert.True(t, j.Resend[0].Resent, "sent again marked as possibly repeated")
}

// The log's last echo vouches only for replies produced after it was
// logged: one produced before may have gone out before the echoed
// message, in a message whose echo never reached the log. After a restart
// the history must reach back to the echo the log held when each reply was
// produced. (Found by the simulator, seed 27756: a life sent #12-21 and
// died before their echo; the room was restarted; a later life sent them
// again marked, split in two messages by the room's size limit, and died
// after the first one's echo (#12-15) reached the log. The next life's
// history held that echo, so #16-21 went out a third time, unmarked.)
func TestResentUnlessTheHistoryReachesBackToTheEchoBeforeTheReply(t *testing.T) {
	st := node.NewMemoryStorage()
	s := open(t, st, engine("db", "api", "web"))
	_, err := s.Join(Join{At: t0, Created: true})
	require.NoError(t, err)
	commit(t, s) // #1 TASKS
	s.Delivered(agentchat.Delivered{Seqs: []uint64{1}, MsgID: "e1", TS: t0.Add(time.Second)})
	require.NoError(t, s.Hear(msg("m1", "@a", "CLAIM db", 2)))
	require.NoError(t, s.Hear(msg("m2", "@b", "CLAIM db", 3)))
	rd := commit(t, s)
	require.Equal(t, []uint64{2, 3}, seqs(rd.Messages)) // ACK, REJECT: sent, and the life dies before their echo

	// The room is restarted: its history is gone, and #2 and #3 go out again, marked.
	second := open(t, st, engine("db", "api", "web"))
	j, err := second.Join(Join{At: t0.Add(time.Minute), Created: true})
	require.NoError(t, err)
	require.Equal(t, []uint64{2, 3}, seqs(j.Resend))
	require.NotNil(t, j.Gap)
	require.Equal(t, []uint64{4}, seqs(commit(t, second).Messages)) // the gap notice
	// The first message holds the gap notice and #2 only; its echo reaches the log.
	second.Delivered(agentchat.Delivered{Seqs: []uint64{4, 2}, MsgID: "e2", TS: t0.Add(61 * time.Second)})
	commit(t, second)

	// The history reaches back to the log's last echo, e2, but #3 went out
	// long before it, and that message has left the history.
	third := open(t, st, engine("db", "api", "web"))
	j, err = third.Join(Join{At: t0.Add(2 * time.Minute), Replayed: 3, History: []agentchat.Message{
		own(third, "e2", 61, 4, 2), msg("m3", "@c", "chat", 62), msg("m4", "@c", "chat", 63)}})
	require.NoError(t, err)
	assert.Equal(t, 2, j.Found)
	assert.False(t, j.Sure)
	require.Equal(t, []uint64{3}, seqs(j.Resend))
	assert.True(t, j.Resend[0].Resent, "sent again marked as possibly repeated")
}

func seqs(ls []node.Line) []uint64 {
	out := make([]uint64, len(ls))
	for i, l := range ls {
		out[i] = l.Seq
	}
	return out
}

// A restart that finds the room's history short of what it keeps, but
// without the last line foreman handled, cannot tell "nothing was said"
// from "the room was restarted and its channel made again": it says the
// gap. (Found by the simulator, seed 252 of its first runs: an earlier
// life made the channel again and died before it could say so.)
func TestShortHistoryWithoutTheLastLineIsAGap(t *testing.T) {
	st := node.NewMemoryStorage()
	s := open(t, st, engine("db"))
	_, err := s.Join(Join{At: t0, Created: true})
	require.NoError(t, err)
	require.NoError(t, s.Hear(msg("m1", "@a", "CLAIM db", 1)))
	commit(t, s)

	again := open(t, st, engine("db"))
	j, err := again.Join(Join{At: t0.Add(time.Hour), Replayed: 2, History: []agentchat.Message{
		{From: "@server", Notice: true, Content: "foreman joined #build", TS: t0.Add(50 * time.Minute)},
		msg("m9", "@a", "PROGRESS db 50", 55*60)}})
	require.NoError(t, err)
	require.NotNil(t, j.Gap, "the room may have lost lines")
	assert.Equal(t, 1, j.Missed)

	// A reconnect whose replay overlaps what it delivered lost nothing.
	j, err = again.Join(Join{At: t0.Add(61 * time.Minute), Replayed: 5, Overlap: true,
		History: []agentchat.Message{msg("m10", "@a", "PROGRESS db 60", 60*60)}})
	require.NoError(t, err)
	assert.Nil(t, j.Gap)
}

// The room stamps many messages with one millisecond: a history whose
// oldest line has the time of the last line handled, but is not it, does
// not reach back. (Found by the simulator, seed 293 of its first runs: a
// CLAIM of the same millisecond as the last line handled had left a
// history of 3 frames, and no gap was said.)
func TestHistoryOfTheSameMillisecondIsAGap(t *testing.T) {
	st := node.NewMemoryStorage()
	s := open(t, st, engine("db"))
	_, err := s.Join(Join{At: t0, Created: true})
	require.NoError(t, err)
	require.NoError(t, s.Hear(msg("m1", "@a", "CLAIM db", 5)))
	commit(t, s)

	again := open(t, st, engine("db"))
	j, err := again.Join(Join{At: t0.Add(time.Minute), Replayed: 3, History: []agentchat.Message{
		msg("m3", "@c", "CLAIM db", 5), msg("m4", "@c", "chat", 6), msg("m5", "@c", "chat", 7)}})
	require.NoError(t, err)
	require.NotNil(t, j.Gap, "m2, of the same millisecond as m1, may have been lost")
	assert.Equal(t, 3, j.Missed, "m3 and what follows are handled")
}

// Before any line was handled, a short history that holds this build's own
// replies does not prove the room lost nothing: they may have been sent
// again after the room was restarted. (Found by the simulator, seed 9797
// of its first runs: a CLAIM said in the first seconds was lost with the
// room's history, and the TASKS sent again made the short history look
// whole.)
func TestOwnRepliesInAShortHistoryProveNothing(t *testing.T) {
	st := node.NewMemoryStorage()
	s := open(t, st, engine("db"))
	_, err := s.Join(Join{At: t0, Created: true})
	require.NoError(t, err)
	commit(t, s)

	again := open(t, st, engine("db"))
	resent := own(again, "e1", 60, 1)
	resent.Stamp.Again = true
	j, err := again.Join(Join{At: t0.Add(2 * time.Minute), Replayed: 2, History: []agentchat.Message{
		resent, msg("m5", "@a", "chat", 90)}})
	require.NoError(t, err)
	require.NotNil(t, j.Gap)
}

// A reload (SIGHUP) that comes after a restart but before foreman is back
// in the room waits for the room: applied at once, its deadlines due by
// then would fire through foreman's time away, and the configuration read
// at the start would be applied over it at the join. (Found by the
// simulator, seed 3794: a SIGHUP while foreman was down timed out two
// builders who had checked in.)
func TestReloadOutOfTheRoomWaitsForTheJoin(t *testing.T) {
	st := node.NewMemoryStorage()
	eng := engine("db")
	eng.Rules.MaxBuildTime = 0
	s := open(t, st, eng)
	_, err := s.Join(Join{At: t0, Created: true})
	require.NoError(t, err)
	require.NoError(t, s.Hear(msg("m1", "@a", "CLAIM db", 1)))
	commit(t, s)

	again := open(t, st, eng) // down for an hour: a pause, not a missed check-in
	more := []coordinator.Component{{Name: "db"}, {Name: "web"}}
	assert.False(t, again.Reload(t0.Add(time.Hour), more, coordinator.Roles{}), "not in the room: it waits")
	assert.False(t, again.Node().HasReady(), "nothing fired, nothing said")
	j, err := again.Join(Join{At: t0.Add(time.Hour + time.Second), Replayed: 1,
		History: []agentchat.Message{msg("m1", "@a", "CLAIM db", 1)}})
	require.NoError(t, err)
	assert.True(t, j.Reloaded)
	assert.Equal(t, []string{"TASKS web"}, lineTexts(commit(t, again).Messages), "the reload, and no TIMEOUT")
	assert.True(t, again.Reload(t0.Add(time.Hour+2*time.Second), more, coordinator.Roles{}), "in the room: at once")
}

// Until its alive mark foreman was running, so the deadlines due by then
// fire after a restart; but a line said before the mark that foreman had
// not handled yet (it was on its way, or foreman was stopped and read its
// alive tick first) comes first: a builder who checked in a minute before
// its deadline is not timed out because foreman died before reading it.
func TestLinesBeforeTheAliveMarkComeBeforeItsDeadlines(t *testing.T) {
	st := node.NewMemoryStorage()
	eng := engine("db")
	eng.Rules.MaxBuildTime = 0
	s := open(t, st, eng)
	_, err := s.Join(Join{At: t0, Created: true})
	require.NoError(t, err)
	require.NoError(t, s.Hear(msg("m1", "@a", "CLAIM db", 1))) // deadline 30m later
	commit(t, s)
	require.NoError(t, st.SaveAlive(t0.Add(31*time.Minute))) // running, then killed

	again := open(t, st, eng)
	j, err := again.Join(Join{At: t0.Add(2 * time.Hour), Replayed: 2, History: []agentchat.Message{
		msg("m1", "@a", "CLAIM db", 1), msg("m2", "@a", "PROGRESS db 50", 29*60)}})
	require.NoError(t, err)
	assert.Nil(t, j.Gap)
	assert.Empty(t, lineTexts(commit(t, again).Messages), "no TIMEOUT: the PROGRESS came in time")
	d, ok := again.Node().Engine().NextDeadline()
	require.True(t, ok)
	// 29m + 30m of deadline, of which 2m ran before the alive mark: the
	// rest runs from the join.
	assert.Equal(t, t0.Add(2*time.Hour+28*time.Minute), d)
}

// The alive mark is the room's latest word, never an estimate of its clock:
// a foreman stopped (SIGSTOP) while its connection was dropped reads its
// alive tick before it reads the drop, and an estimate would vouch for
// time it was already out of the room. (Found by the simulator, seed
// 24944: the 4 s between a displacement and such a mark were counted
// against a builder, timed out 3 s early.)
func TestAliveMarkIsTheRoomsLatestWord(t *testing.T) {
	s := open(t, node.NewMemoryStorage(), engine("db"))
	assert.True(t, s.AliveMark().IsZero(), "not in the room: nothing to vouch for")
	_, err := s.Join(Join{At: t0, Created: true})
	require.NoError(t, err)
	require.NoError(t, s.Hear(msg("m1", "@a", "CLAIM db", 7)))
	assert.Equal(t, t0.Add(7*time.Second), s.AliveMark())
	s.Clock(t0.Add(9 * time.Second))
	assert.Equal(t, t0.Add(9*time.Second), s.AliveMark())
	s.Disconnected()
	assert.True(t, s.AliveMark().IsZero())
}

// A CLAIM in the room before foreman joined is history, never a command:
// the first TASKS tells its sender to claim again. One the room stamped a
// moment before foreman's start time, but sent live after the join (the
// room sends no time with JOINED, so the start is foreman's clock when it
// had read the replay), is answered (contract section 1).
func TestClaimsAroundTheJoin(t *testing.T) {
	s := open(t, node.NewMemoryStorage(), engine("db", "api"))
	j, err := s.Join(Join{At: t0.Add(2 * time.Second), Replayed: 3, History: []agentchat.Message{
		msg("m1", "@early", "hello\nCLAIM db", 0),
		msg("m2", "@early", "CLAIM api", 0),
		msg("m3", "@chatty", "> CLAIM api\nwho builds db?", 1),
	}})
	require.NoError(t, err)
	assert.Equal(t, 1, j.ClaimAgain)
	require.NoError(t, s.Hear(msg("m4", "@late", "CLAIM api", 1)))
	require.NoError(t, s.Hear(msg("m5", "@early", "CLAIM db", 3)))
	assert.Equal(t, []string{
		"TASKS db api -- claim again: @early (your CLAIM came before foreman joined the room)",
		"ACK api @late",
		"ACK db @early",
	}, lineTexts(commit(t, s).Messages))
}
