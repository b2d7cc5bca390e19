package bot

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
	"github.com/agentforeman/foreman/transcript"
)

// replayRecording replays the bot's recording and fails with its diff.
func replayRecording(t *testing.T, path string) *transcript.Transcript {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	tr, err := transcript.Parse(path, f)
	require.NoError(t, err)
	res, err := transcript.Replay(tr)
	require.NoError(t, err)
	if !res.Passed() {
		var d strings.Builder
		res.WriteDiff(&d)
		raw, _ := os.ReadFile(path)
		t.Fatalf("the recording does not replay:\n%s\nrecording:\n%s", d.String(), raw)
	}
	return tr
}

// A live session over the embedded server, recorded, replays exactly.
func TestLiveSessionReplaysFromItsRecording(t *testing.T) {
	r := roomtest.Start(t)
	b1, b2, b3 := r.Join(t, "b1"), r.Join(t, "b2"), r.Join(t, "b3")
	silent, aud := r.Join(t, "silent"), r.Join(t, "aud")
	id, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	cfg := fastConfig(t, r.URL(), t.TempDir(),
		coordinator.Component{Name: "db"}, coordinator.Component{Name: "docs"},
		coordinator.Component{Name: "api", Deps: []string{"db"}})
	cfg.Roles.Auditors = []string{aud.ID}
	// Long enough that the working builders, who check in with each step,
	// never time out on a slow machine; only the silent one does. No
	// builder waits on the silent one's TIMEOUT while it holds a component.
	cfg.Rules.CheckinInterval = 2 * time.Second
	bot := id.AgentID()
	_, stop := runBot(t, cfg, id)

	b1.Await(bot, "TASKS db docs")
	b1.Say("CLAIM db")
	b1.Await(bot, "ACK db "+b1.ID)
	silent.Say("CLAIM docs")
	silent.Await(bot, "ACK docs "+silent.ID)
	b1.Say("PROGRESS db 150")
	b1.Await(bot, "ERROR "+b1.ID+" PROGRESS:")
	b1.Say("- **PROGRESS db 50** schema done")
	b1.Say("READY db pr/1")
	aud.Await(bot, "REVIEW db "+b1.ID+" pr/1")
	aud.Say("AUDIT db FAIL missing tests")
	b1.Await(bot, "FIX db "+b1.ID+" 1/3 missing tests")
	b1.Say("READY db pr/1")
	aud.Await(bot, "REVIEW db")
	aud.Say("AUDIT db PASS")
	b2.Await(bot, "MERGED db")
	b3.Await(bot, "TIMEOUT docs "+silent.ID) // the silent builder never checked in
	b3.Say("CLAIM docs")
	b3.Await(bot, "ACK docs "+b3.ID+" after TIMEOUT of "+silent.ID)
	b3.Say("READY docs pr/3")
	b2.Say("CLAIM api")
	b2.Await(bot, "ACK api "+b2.ID)
	b2.Say("READY api pr/2")
	aud.Await(bot, "REVIEW")
	aud.Await(bot, "REVIEW")
	aud.Say("AUDIT api PASS\nAUDIT docs PASS")
	aud.Await(bot, "COMPLETE shop")
	require.NoError(t, stop())

	tr := replayRecording(t, cfg.Record)
	assert.GreaterOrEqual(t, len(tr.Lines), 25, "the whole session was recorded")
}

// The coordinator's own downtime is a pause: a builder that kept working
// while foreman was down is not timed out, and what it said meanwhile is
// handled, once, after the restart.
func TestDowntimeIsNoTimeout(t *testing.T) {
	r := roomtest.Start(t)
	b1 := r.Join(t, "b1")
	id, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	cfg := fastConfig(t, r.URL(), t.TempDir(), coordinator.Component{Name: "db"}, coordinator.Component{Name: "web"})
	bot := id.AgentID()
	deadline := cfg.Rules.CheckinInterval * time.Duration(cfg.Rules.MissedCheckins)

	_, stop := runBot(t, cfg, id)
	b1.Await(bot, "TASKS")
	b1.Say("CLAIM db")
	b1.Await(bot, "ACK db "+b1.ID)
	require.NoError(t, stop())

	// foreman is down for twice the check-in deadline; the builder keeps working.
	b1.Say("PROGRESS db 10 working while foreman is away")
	time.Sleep(2 * deadline)

	_, stop = runBot(t, cfg, id)
	b1.Say("STATUS db")
	status, seen := b1.Await(bot, "STATUS db")
	assert.Contains(t, status, "STATUS db building owner="+b1.ID)
	assert.Contains(t, status, "progress=10%", "the line said during the downtime was handled")
	for _, l := range seen {
		assert.NotContains(t, l, "TIMEOUT", "no false timeout after the downtime")
	}
	require.NoError(t, stop())

	tr := replayRecording(t, cfg.Record)
	var away []transcript.Timed
	for _, d := range tr.Timed {
		if d.Kind == coordinator.KindRecover {
			away = append(away, d)
		}
	}
	require.Len(t, away, 1, "the recording says where foreman was away")
	assert.GreaterOrEqual(t, away[0].At-away[0].From, 2*deadline)
}

// SIGHUP reloads the components: a new one becomes claimable; a reload with
// a cycle halts the build and a corrected one resumes it; a config with an
// error changes nothing.
func TestReload(t *testing.T) {
	r := roomtest.Start(t)
	b1 := r.Join(t, "b1")
	id, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	cfg := fastConfig(t, r.URL(), t.TempDir(), coordinator.Component{Name: "db"})
	next := make(chan *config.Config, 1)
	reload := make(chan struct{})
	bot := id.AgentID()
	_, stop := runBot(t, cfg, id, func(o *Options) {
		o.Reload = reload
		o.ReloadConfig = func() (*config.Config, error) { return <-next, nil }
	})
	b1.Await(bot, "TASKS db")

	grown := *cfg
	grown.Build.Components = []coordinator.Component{{Name: "db"}, {Name: "cache"}}
	next <- &grown
	reload <- struct{}{}
	b1.Await(bot, "TASKS db cache")

	looped := *cfg
	looped.Build.Components = []coordinator.Component{{Name: "db", Deps: []string{"cache"}}, {Name: "cache", Deps: []string{"db"}}}
	next <- &looped
	reload <- struct{}{}
	b1.Await(bot, "ESCALATE build cycle db -> cache -> db")
	b1.Say("CLAIM db")
	b1.Await(bot, "REJECT db "+b1.ID+" build halted")

	next <- &grown
	reload <- struct{}{}
	b1.Await(bot, "TASKS db cache")

	// The roles reload too: b1 becomes an operator.
	b1.Say("PAUSE")
	b1.Await(bot, "ERROR "+b1.ID+" only operators may PAUSE")
	promoted := grown
	promoted.Roles.Operators = []string{b1.ID}
	next <- &promoted
	reload <- struct{}{}
	b1.Say("STATUS cache") // after the reload: a line said before it may be handled before it
	b1.Await(bot, "STATUS cache")
	b1.Say("PAUSE\nRESUME")
	b1.Await(bot, "OK RESUME")

	// A config with an error changes nothing, and the operators are told
	// in the room why.
	empty := promoted
	empty.Build.Components = nil
	next <- &empty
	reload <- struct{}{}
	refused, _ := b1.Await(bot, "ERROR build reload refused, nothing changed: build.components: no components")
	assert.Contains(t, refused, "; "+b1.ID+": fix the config, then send foreman SIGHUP again")
	b1.Say("CLAIM cache")
	b1.Await(bot, "ACK cache "+b1.ID)
	require.NoError(t, stop())
	replayRecording(t, cfg.Record)
}

// The reload's log line counts the live build's components (those ADDed in
// the room included), with the config's own count beside it.
func TestReloadLogsTheLiveBuildsSize(t *testing.T) {
	r := roomtest.Start(t)
	op := r.Join(t, "op")
	id, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	cfg := fastConfig(t, r.URL(), t.TempDir(), coordinator.Component{Name: "db"})
	cfg.Roles.Operators = []string{op.ID}
	next := make(chan *config.Config, 1)
	reload := make(chan struct{})
	var logs roomtest.SyncBuffer
	bot := id.AgentID()
	_, stop := runBot(t, cfg, id, func(o *Options) {
		o.Logger = zerolog.New(&logs)
		o.Reload = reload
		o.ReloadConfig = func() (*config.Config, error) { return <-next, nil }
	})
	op.Await(bot, "TASKS db")
	op.Say("ADD x\nADD y")
	op.Await(bot, "OK ADD y")
	grown := *cfg
	grown.Build.Components = []coordinator.Component{{Name: "db"}, {Name: "cache"}}
	next <- &grown
	reload <- struct{}{}
	op.Await(bot, "TASKS db x y cache")
	require.NoError(t, stop())
	assert.Contains(t, logs.String(), `"components":4,"config_components":2,"operators":1,"message":"reloaded the components and the roles"`)
}

// A builder that claimed before foreman was in the room is not left
// waiting for an answer that will never come: the first TASKS tells it to
// claim again (contract section 1), and its second CLAIM is answered.
func TestAClaimBeforeForemanJoinedIsToldToClaimAgain(t *testing.T) {
	r := roomtest.Start(t)
	early, other := r.Join(t, "early"), r.Join(t, "other")
	early.Say("CLAIM db")
	other.Say("> CLAIM db\nis what I would say, once foreman is here") // chat: quoted
	id, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	cfg := fastConfig(t, r.URL(), t.TempDir(), coordinator.Component{Name: "db"}, coordinator.Component{Name: "api"})
	cfg.Rules.CheckinInterval = time.Minute
	bot := id.AgentID()
	_, stop := runBot(t, cfg, id)

	tasks, _ := early.Await(bot, "TASKS db api -- claim again:")
	assert.Contains(t, tasks, early.ID)
	assert.NotContains(t, tasks, other.ID, "a quoted CLAIM is chat")
	early.Say("CLAIM db")
	early.Await(bot, "ACK db "+early.ID)
	require.NoError(t, stop())
	replayRecording(t, cfg.Record)
}

// Only the time foreman was away counts as a pause, never a quiet stretch
// before it stopped (contract section 3): while the room is quiet, foreman
// asks the room's clock, and the alive mark follows it, so a restart's
// time away begins where foreman stopped, not at the last line said.
func TestAQuietStretchBeforeAStopIsNotDowntime(t *testing.T) {
	r := roomtest.Start(t)
	b1 := r.Join(t, "b1")
	id, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	dir := t.TempDir()
	cfg := fastConfig(t, r.URL(), dir, coordinator.Component{Name: "db"})
	cfg.Rules.CheckinInterval = 10 * time.Minute // no deadline comes due to read the room's clock
	bot := id.AgentID()
	fast := func(o *Options) { o.aliveEvery, o.heartbeatEvery = 50*time.Millisecond, 100*time.Millisecond }

	_, stop := runBot(t, cfg, id, fast)
	b1.Await(bot, "TASKS")
	b1.Say("CLAIM db")
	b1.Await(bot, "ACK db "+b1.ID)
	lastLine := time.Now()
	// Quiet: nobody says anything; the alive mark moves on by itself.
	require.Eventually(t, func() bool {
		mark := aliveMark(t, cfg.Journal)
		return mark.After(lastLine.Add(time.Second))
	}, 20*time.Second, 20*time.Millisecond, "the alive mark never moved past the last line while the room was quiet")
	// The heartbeat leaves the journal as it is: an idle day adds nothing
	// but the alive mark's rewrite of its own 16 bytes.
	before, mark := journalBytes(t, cfg.Journal), aliveMark(t, cfg.Journal)
	require.Eventually(t, func() bool { return aliveMark(t, cfg.Journal).After(mark.Add(time.Second)) },
		20*time.Second, 20*time.Millisecond, "the alive mark stopped moving")
	assert.Equal(t, before, journalBytes(t, cfg.Journal), "a second of heartbeats grew the journal")
	require.NoError(t, stop())
	stopped := time.Now()

	_, stop = runBot(t, cfg, id, fast)
	b1.Say("STATUS db")
	b1.Await(bot, "STATUS db")
	restarted := time.Now()
	require.NoError(t, stop())
	tr := replayRecording(t, cfg.Record)
	var away []transcript.Timed
	for _, d := range tr.Timed {
		if d.Kind == coordinator.KindRecover {
			away = append(away, d)
		}
	}
	require.Len(t, away, 1)
	assert.LessOrEqual(t, away[0].At-away[0].From, restarted.Sub(stopped)+400*time.Millisecond,
		"the time away is the time foreman was down (and a heartbeat), not the quiet stretch before it (over a second)")
}

// journalBytes is the size of each file of the journal's directory but the
// alive mark.
func journalBytes(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && e.Name() != "alive" {
			out[e.Name()] = info.Size()
		}
	}
	return out
}

// aliveMark reads the journal's alive mark (journal.Journal's format: its
// first 8 bytes, Unix ms).
func aliveMark(t *testing.T, dir string) time.Time {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "alive"))
	if err != nil || len(data) < 8 {
		return time.Time{}
	}
	return time.UnixMilli(int64(binary.LittleEndian.Uint64(data[:8])))
}
