package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/agentchat/server"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/config"
)

func TestChatHandlesSlashCommandsLocally(t *testing.T) {
	r := newAgentRoom(t)
	in, typing := io.Pipe()
	stdout, stderr, done, _ := startAgent(t, in, "agent", "--url", r.url, "--role", "chat", "--name", "me", "--rate-limit", "5ms")
	go func() { _, _ = io.WriteString(typing, "/help\n/bogus x\nSTATUS\n/quit\n") }()

	timeout := time.After(agentWait)
	for said := false; !said; {
		select {
		case m := <-r.lines:
			assert.NotContains(t, m.Content, "/", "a /command is never sent")
			said = strings.Contains(m.Content, "STATUS")
		case <-timeout:
			t.Fatal("STATUS never reached the room")
		}
	}
	select {
	case code := <-done:
		assert.Equal(t, 0, code, stderr.String())
	case <-time.After(agentWait):
		t.Fatal("/quit did not end the chat")
	}
	assert.Contains(t, stderr.String(), "/help lists them,\n/who lists the room (names, ids, roles, owners), /quit leaves", "the local commands are announced at start")
	assert.Contains(t, stderr.String(), "operators  ASSIGN c @id | RELEASE c | RESOLVE c [note]")
	for _, local := range []string{"/who ", "/id NAME ", "/help ", "/quit ", "ASSIGN c NAME sends the id"} {
		assert.Contains(t, stderr.String(), local, "/help lists it")
	}
	assert.Contains(t, stderr.String(), "/bogus is not a command here")
	assert.Regexp(t, `\d\d:\d\d:\d\d  me +chat +STATUS\n`, stdout.String(), "its own line is shown, with a time, once the room has it")
}

func TestChatShowsHistoryAtItsOwnTime(t *testing.T) {
	var out bytes.Buffer
	show := newRoomShow(&out, false, "")
	said := time.Date(2020, 1, 2, 3, 4, 5, 0, time.Local)
	showMessage(show, agentchat.Message{From: "@f", FromName: "foreman", Content: "TASKS api\nACK api @b1", TS: said, Replay: true})
	showMessage(show, agentchat.Message{From: "@server", Content: "b1 joined", Notice: true})
	assert.Equal(t, "Jan 02 03:04:05  foreman  coordinator TASKS api\nJan 02 03:04:05  foreman  coordinator ACK api @b1\n", out.String())

	out.Reset()
	show = newRoomShow(&out, false, "")
	stamp := agentchat.Stamp{Tag: "foreman shop/7f3a9c", Seqs: []agentchat.SeqRange{{From: 12, To: 12}}}
	showMessage(show, agentchat.Message{From: "@f", FromName: "foreman", Content: "STATUS db pending\n" + stamp.String(), Stamp: &stamp, TS: said})
	assert.Equal(t, "Jan 02 03:04:05  foreman  coordinator STATUS db pending\n", out.String(), "the stamp is not shown, and names the coordinator")

	now := time.Now()
	assert.Equal(t, now.Add(-time.Second).Format(time.TimeOnly), clock(now.Add(-time.Second), now), "today's lines show the time of day")
	assert.Equal(t, now.Format(time.TimeOnly), clock(time.Time{}, now))
}

func TestAgentSaysItIsInTheRoomOnlyOnceJoined(t *testing.T) {
	in, typing := io.Pipe()
	t.Cleanup(func() { typing.Close() })
	_, stderr, done, _ := startAgent(t, in, "agent", "--url", "ws://127.0.0.1:1", "--role", "chat", "--name", "me", "--log-level", "warn")
	select {
	case code := <-done: // after a few attempts, however long they take
		assert.Equal(t, 1, code)
	case <-time.After(time.Minute):
		t.Fatal("the agent kept trying a server that is not there")
	}
	assert.Contains(t, stderr.String(), "me: agent id ")
	assert.Contains(t, stderr.String(), "cannot reach the chat server at ws://127.0.0.1:1 ", "the URL at fault")
	assert.Contains(t, stderr.String(), "the URL is --url: check it", "and where it came from")
	assert.NotContains(t, stderr.String(), "me: in #build", "no room, so not in it")

	r := newAgentRoom(t)
	_, stderr, _, stop := startAgent(t, strings.NewReader(""), "agent", "--url", r.url, "--role", "auditor", "--name", "aud", "--rate-limit", "5ms")
	r.joined("aud")
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "aud: in #build\n") }, agentWait, 5*time.Millisecond)
	stop()
}

// chatRoom is a room as a chat client has seen it: foreman, the operator
// (you), two builders named b1 (one here, one gone) and b2.
func chatRoom(out *bytes.Buffer) *roomShow {
	show := newRoomShow(out, false, "")
	show.Self, show.Role = "@op", "chat"
	show.SetRoles(coordinator.Roles{Operators: []string{"@op", "@absent"}, Auditors: []string{"@aud"}}, "shop.yaml's roles.*")
	show.arrived(agentchat.Agent{ID: "@f", Name: "foreman"}, agentchat.Agent{ID: "@op", Name: "olga"},
		agentchat.Agent{ID: "@cb88", Name: "b1"}, agentchat.Agent{ID: "@dd01", Name: "b2"}, agentchat.Agent{ID: "@old1", Name: "b1"})
	show.left(agentchat.Agent{ID: "@old1", Name: "b1"})
	at := time.Date(2020, 1, 2, 3, 4, 5, 0, time.Local)
	show.lineAt(at, "@f", "foreman", "TASKS db auth")
	show.lineAt(at, "@cb88", "b1", "CLAIM db")
	show.lineAt(at, "@f", "foreman", "ACK db @cb88")
	show.lineAt(at, "@dd01", "b2", "CLAIM auth")
	show.lineAt(at, "@f", "foreman", "ACK auth @dd01")
	show.lineAt(at, "@f", "foreman", "TIMEOUT auth @dd01")
	show.lineAt(at, "@f", "foreman", "STATUS web building owner=@gone since=1m")
	return show
}

func TestChatKeepsIdsAndShowsTheirNames(t *testing.T) {
	var out bytes.Buffer
	chatRoom(&out)
	assert.Contains(t, out.String(), "foreman  coordinator ACK db @cb88 (b1)\n", "the id stays, the name follows it")
	assert.Contains(t, out.String(), "foreman  coordinator STATUS web building owner=@gone since=1m\n", "an unknown id is left alone")
	assert.Regexp(t, `(?m)^Jan 02 03:04:05  b1 +CLAIM db$`, out.String(), "the other b1 has left: the name is enough")
	assert.Regexp(t, `(?m)^Jan 02 03:04:05  b2 +CLAIM auth$`, out.String())
}

func TestChatWhoListsTheRoom(t *testing.T) {
	var out, who bytes.Buffer
	show := chatRoom(&out)
	show.who(&who, "#build")
	t.Log("\n" + who.String())
	text := who.String()
	assert.Contains(t, text, "In #build (4): names and ids from the room; roles from shop.yaml's roles.* and from what each said; owners from foreman's")
	assert.Regexp(t, `(?m)^  b1 +@cb88 +builder \(by its lines\) +owns db$`, text)
	assert.Regexp(t, `(?m)^  b2 +@dd01 +builder \(by its lines\)$`, text, "TIMEOUT took auth away")
	assert.Regexp(t, `(?m)^  foreman +@f +coordinator$`, text)
	assert.Regexp(t, `(?m)^  olga +@op +operator \(roles.operators\), you$`, text)
	assert.Contains(t, text, "Not here, but named in the roles or owning a component:\n")
	assert.Regexp(t, `(?m)^  - +@absent +operator \(roles.operators\)$`, text)
	assert.Regexp(t, `(?m)^  - +@gone +- +owns web$`, text, "STATUS names owners")
	assert.NotContains(t, text, "@old1", "gone, and neither in the roles nor owning anything")
}

// Under foreman up the host is in roles.ci and roles.merger for the run,
// though the config file does not list it: /who says so, rather than "ci
// (by its lines)"; and its MERGED (merge mode external) ends the builder's
// ownership, as foreman's own MERGED would.
func TestChatWhoKnowsTheHostUpRuns(t *testing.T) {
	dir := t.TempDir()
	hostKey := filepath.Join(dir, "host.json")
	hid, err := agentchat.NewIdentity("host")
	require.NoError(t, err)
	require.NoError(t, hid.Save(hostKey))
	c := &config.Config{}
	c.Host.Repo, c.Host.Identity = filepath.Join(dir, "shop.git"), hostKey
	c.Rules.CIGating, c.Rules.Merge = true, coordinator.MergeExternal

	var out, who bytes.Buffer
	show := chatRoom(&out)
	show.hostRoles(c)
	show.arrived(agentchat.Agent{ID: hid.AgentID(), Name: "host"})
	at := time.Date(2020, 1, 2, 3, 4, 5, 0, time.Local)
	show.lineAt(at, hid.AgentID(), "host", "CI db PASS")
	show.lineAt(at, "@dd01", "b2", "MERGED db") // not a merger: changes nothing
	show.who(&who, "#build")
	assert.Regexp(t, `(?m)^  b1 +@cb88 +builder \(by its lines\) +owns db$`, who.String())
	show.lineAt(at, hid.AgentID(), "host", "MERGED db")
	who.Reset()
	show.who(&who, "#build")
	text := who.String()
	t.Log("\n" + text)
	assert.Regexp(t, `(?m)^  host +`+hid.AgentID()+` +ci \(the host's, as foreman up adds it\), merger \(the host's, as foreman up adds it\)$`, text)
	assert.Regexp(t, `(?m)^  b1 +@cb88 +builder \(by its lines\)$`, text, "merged: nobody's")
}

// The operator's own lines are labelled with the role the config gives it,
// as everyone else's client shows them ("olga operator", not "olga
// chat"); a name two ids here go by is shown with the id, and only while
// both are here.
func TestChatLabelsAsOthersSeeThem(t *testing.T) {
	var out bytes.Buffer
	show := chatRoom(&out)
	at := time.Date(2020, 1, 2, 3, 4, 5, 0, time.Local)
	out.Reset()
	show.lineAt(at, "@op", "olga", "RESOLVE db")
	assert.Equal(t, "Jan 02 03:04:05 olga operator RESOLVE db\n", squeeze(out.String()))

	show.arrived(agentchat.Agent{ID: "@28b2", Name: "olga"})
	out.Reset()
	show.lineAt(at, "@op", "olga", "STATUS")
	show.lineAt(at, "@28b2", "olga", "hello")
	assert.Equal(t, "Jan 02 03:04:05 olga (@op) operator STATUS\nJan 02 03:04:05 olga (@28b2) hello\n", squeeze(out.String()))

	show.left(agentchat.Agent{ID: "@28b2", Name: "olga"})
	out.Reset()
	show.lineAt(at, "@op", "olga", "STATUS")
	show.lineAt(at, "@28b2", "olga", "said before it left, shown from the history")
	assert.Equal(t, "Jan 02 03:04:05 olga operator STATUS\nJan 02 03:04:05 olga (@28b2) said before it left, shown from the history\n", squeeze(out.String()))

	// Without a role in the config, the agent's own lines show the role it
	// plays here.
	out.Reset()
	show.Self = "@dd01"
	show.lineAt(at, "@dd01", "b2", "STATUS")
	assert.Equal(t, "Jan 02 03:04:05 b2 chat STATUS\n", squeeze(out.String()))
}

// squeeze makes the printer's padding one space, for comparing lines.
func squeeze(s string) string {
	var lines []string
	for l := range strings.SplitSeq(strings.TrimSuffix(s, "\n"), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestChatIdLooksANameUp(t *testing.T) {
	var out, id bytes.Buffer
	show := chatRoom(&out)
	show.lookup(&id, "b1")
	assert.Equal(t, "b1 is @cb88 (here)\nb1 is @old1 (not here now)\n", id.String())
	id.Reset()
	show.lookup(&id, "B2")
	assert.Equal(t, "b2 is @dd01 (here)\n", id.String(), "case is forgiven when nothing matches exactly")
	id.Reset()
	show.lookup(&id, "zed")
	assert.Contains(t, id.String(), "nobody here or heard so far goes by zed")
	id.Reset()
	show.lookup(&id, "@cb88")
	assert.Equal(t, "@cb88 is a sender id (b1)\n", id.String())
}

func TestChatAssignsByName(t *testing.T) {
	var out bytes.Buffer
	show := chatRoom(&out)
	for typed, want := range map[string]struct {
		line, note string
		ok         bool
	}{
		"ASSIGN auth b2":    {"ASSIGN auth @dd01", "b2 is @dd01, the only one here by that name: sending ASSIGN auth @dd01", true},
		"assign auth @b2":   {"assign auth @dd01", "b2 is @dd01, the only one here by that name: sending assign auth @dd01", true},
		"ASSIGN auth @dd01": {"ASSIGN auth @dd01", "", true},
		"ASSIGN auth @aud":  {"ASSIGN auth @aud", "", true},
		"ASSIGN auth @zz":   {"ASSIGN auth @zz", "", true},
		"ASSIGN auth zed":   {"", "not sent: nobody here goes by zed (/who lists the room); type a sender id: ASSIGN auth @id", false},
		"RELEASE auth":      {"RELEASE auth", "", true},
		"ASSIGN auth b2 x":  {"ASSIGN auth b2 x", "", true},
	} {
		line, note, ok := show.ExpandAssign(typed)
		assert.Equal(t, want.ok, ok, typed)
		assert.Equal(t, want.note, note, typed)
		if ok {
			assert.Equal(t, want.line, line, typed)
		}
	}
	// Two here named b1: nothing is sent, and the candidates are named.
	show.arrived(agentchat.Agent{ID: "@old1", Name: "b1"})
	_, note, ok := show.ExpandAssign("ASSIGN auth b1")
	assert.False(t, ok)
	assert.Equal(t, "not sent: 2 here go by b1 (@cb88, @old1); type the id: ASSIGN auth @cb88", note)
}

// Over a real room: a line said before the chat client joined is shown at
// the time it was said, not when the client read it in the replay.
func TestChatShowsReplayedHistoryAtTheTimeItWasSaid(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := server.DefaultConfig() // with the stock history
	cfg.Listen, cfg.Channels, cfg.RateLimit, cfg.Logger = "127.0.0.1:0", []string{"#build"}, 5*time.Millisecond, zerolog.Nop()
	room, err := server.Start(ctx, cfg)
	require.NoError(t, err)
	defer room.Close()
	id, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	c := agentchat.New(agentchat.Config{URL: room.URL(), Channel: "#build", Identity: id, RateLimit: 5 * time.Millisecond, Logger: zerolog.Nop()})
	go func() { _ = c.Run(ctx) }()
	var said time.Time
	for e := range c.Events() {
		if _, ok := e.(agentchat.Joined); ok {
			c.Send(agentchat.Line{Seq: 1, Text: "TASKS api"})
		}
		if d, ok := e.(agentchat.Delivered); ok {
			said = d.TS
			break
		}
	}
	// The client joins in a later second than the line was said.
	for time.Now().Truncate(time.Second).Equal(said.Truncate(time.Second)) {
		time.Sleep(50 * time.Millisecond)
	}
	in, typing := io.Pipe() // open: an ended stdin would end the chat
	defer typing.Close()
	stdout, _, _, stop := startAgent(t, in, "agent", "--url", room.URL(), "--role", "chat", "--name", "me", "--no-color")
	defer stop()
	want := said.Local().Format(time.TimeOnly) + "  foreman  coordinator TASKS api\n"
	require.Eventually(t, func() bool { return strings.Contains(stdout.String(), want) }, agentWait, 10*time.Millisecond,
		"want %q in %q", want, stdout.String())
}

// A line from foreman the chat client cannot read (cut short, or from a
// newer contract) is shown and otherwise skipped: it never stops the client.
func TestChatSkipsForemansShortLines(t *testing.T) {
	var out bytes.Buffer
	show := chatRoom(&out)
	at := time.Date(2020, 1, 2, 3, 4, 5, 0, time.Local)
	for _, l := range []string{"STATUS", "STATUS web", "ACK", "ACK db", "OK", "OK RELEASE", "TASKS", "FIX db @cb88 x/y"} {
		require.NotPanics(t, func() { show.lineAt(at, "@f", "foreman", l) }, l)
	}
	var who bytes.Buffer
	show.who(&who, "#build")
	assert.Regexp(t, `(?m)^  b1 +@cb88 +builder \(by its lines\) +owns db$`, who.String(), "the odd lines changed nobody's ownership")
}
