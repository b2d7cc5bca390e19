package web

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/bot"
	"github.com/agentforeman/foreman/protocol"
)

// A restarted foreman's board goes on where it was: the room log, the open
// escalations' reasons, the names, and every counter, from the file it
// keeps beside the journal.
func TestBoardCarriesItsLogAndCountersAcrossARestart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "journal", "board.json")
	s, _, stop, err := Start("127.0.0.1:0", Options{StateFile: file})
	require.NoError(t, err)
	s.Attach(&fakeSource{view: shopView(), health: bot.Health{Connected: true, Joined: true, Commits: 4, Entries: 9},
		stats: agentchat.Stats{MessagesSent: 5, LinesSent: 11, Reconnects: 1}})
	s.Observe(&coordinator.Event{Kind: coordinator.KindStart, At: t0}, said(t0, protocol.Tasks([]string{"db"})))
	s.Observe(heard(t0, "@b1", "CLAIM db"), said(t0, protocol.Ack("db", "@b1", "")))
	s.Observe(tick(t0), said(t0, protocol.Escalate("web", protocol.HardBlocker, "missing_dependency: no schema", "RESOLVE web")))
	s.Handled(0, 3)
	s.Named("@b1", "alice")
	stop() // the bot has stopped: the board keeps what it has
	require.FileExists(t, file)

	s2 := New(Options{StateFile: file})
	s2.Attach(&fakeSource{view: shopView(), health: bot.Health{Connected: true, Joined: true, Commits: 1, Entries: 1},
		stats: agentchat.Stats{MessagesSent: 2, LinesSent: 2}})
	ts := newTestServer(t, s2)
	var b Board
	getJSON(t, ts.URL+"/api/view", &b)
	var texts []string
	for _, e := range b.Log {
		texts = append(texts, e.Text)
	}
	assert.Equal(t, []string{"TASKS db", "CLAIM db", "ACK db @b1", "ESCALATE web hard-blocker missing_dependency: no schema; RESOLVE web"}, texts)
	assert.Equal(t, "@b1", b.Log[1].From)
	assert.True(t, b.Log[2].Said)
	assert.Equal(t, "missing_dependency: no schema; RESOLVE web", b.Escalations["web"].Text, "the reason, not just the code")
	assert.Equal(t, "alice", b.Names["@b1"])
	assert.Equal(t, int64(7), b.Room.MessagesSent, "5 before the restart, 2 since")
	assert.Equal(t, int64(13), b.Room.LinesSent)
	assert.Equal(t, int64(1), b.Room.Reconnects)

	out := scrape(t, ts.URL)
	for _, want := range []string{
		`foreman_replies_total{verb="ACK"} 1`,
		`foreman_replies_total{verb="TASKS"} 1`,
		`foreman_claims_total 1`,
		`foreman_escalations_total{code="hard-blocker"} 1`,
		`foreman_lines_heard_total 1`,
		`foreman_events_handled_total 3`,
		`foreman_room_messages_sent_total 7`,
		`foreman_journal_commits_total 5`,
		`foreman_journal_entries_total 10`,
	} {
		assert.Truef(t, strings.Contains(out, want+"\n"), "the scrape lacks %q", want)
	}

	// A new build starts the log afresh.
	s2.Observe(&coordinator.Event{Kind: coordinator.KindStart, At: t0}, said(t0, protocol.Tasks([]string{"db"})))
	getJSON(t, ts.URL+"/api/view", &b)
	require.Len(t, b.Log, 1)
	assert.Equal(t, "TASKS db", b.Log[0].Text)
}

// A damaged file costs the board its memory, not its start.
func TestBoardStartsEmptyFromADamagedFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "board.json")
	require.NoError(t, os.WriteFile(file, []byte("{not json"), 0o600))
	s := New(Options{StateFile: file})
	s.Attach(&fakeSource{view: shopView(), health: healthy()})
	var b Board
	getJSON(t, newTestServer(t, s).URL+"/api/view", &b)
	assert.Empty(t, b.Log)
}

// A board saved before any escalation holds replies and no escalations
// (the empty map is left out of the file): after a restart, the first
// ESCALATE is counted, not a panic that took foreman up down with it.
func TestTheFirstEscalationAfterARestart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "journal", "board.json")
	s, _, stop, err := Start("127.0.0.1:0", Options{StateFile: file})
	require.NoError(t, err)
	s.Attach(&fakeSource{view: shopView(), health: bot.Health{Connected: true, Joined: true}})
	s.Observe(&coordinator.Event{Kind: coordinator.KindStart, At: t0}, said(t0, protocol.Tasks([]string{"db"})))
	stop()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NotContains(t, string(data), `"escalations"`)

	s2 := New(Options{StateFile: file})
	s2.Attach(&fakeSource{view: shopView(), health: bot.Health{Connected: true, Joined: true}})
	assert.NotPanics(t, func() {
		s2.Observe(tick(t0), said(t0, protocol.Escalate("web", protocol.HardBlocker, "missing_dependency: no schema", "RESOLVE web")))
	})
	out := scrape(t, newTestServer(t, s2).URL)
	assert.Contains(t, out, `foreman_escalations_total{code="hard-blocker"} 1`+"\n")
}
