package realagents

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/mcpagent"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// waitFor calls wait() until an event with a reply of verb comes, and
// returns it with every event seen on the way.
func (a *agent) waitFor(verb string) (mcpagent.Event, []mcpagent.Event) {
	a.t.Helper()
	var seen []mcpagent.Event
	deadline := time.Now().Add(patience)
	for time.Now().Before(deadline) {
		var w mcpagent.WaitResult
		a.call("wait", map[string]any{"timeout_seconds": 5}, &w)
		for _, e := range w.Events {
			seen = append(seen, e)
			if e.Reply != nil && e.Reply.Verb == verb {
				return e, seen
			}
		}
	}
	a.t.Fatalf("wait() never returned %s; saw %+v", verb, seen)
	return mcpagent.Event{}, seen
}

// A builder's whole component life through foreman mcp's tools, against
// foreman run: TASKS, claim, progress, ready, an audit FAIL and its FIX,
// ready again, PASS, MERGED. Every answer is foreman's, read into its
// parts.
func TestMCPBuilderWholeLife(t *testing.T) {
	b, auditor := startBuild(t, "  checkin_interval: 30s\n", "30m", "db")
	ada := b.mcpAgent("ada")

	tasks, _ := ada.waitFor("TASKS")
	assert.Equal(t, []string{"db"}, tasks.Reply.Components)
	assert.True(t, tasks.Coordinator)
	assert.Equal(t, b.foreman, tasks.From)
	assert.False(t, tasks.TS.IsZero(), "the room's time")

	var claim mcpagent.Answer
	ada.call("claim", map[string]any{"component": "db"}, &claim)
	require.True(t, claim.Answered, claim.Note)
	require.True(t, claim.Accepted, claim.Note)
	require.Len(t, claim.Replies, 1)
	ack := claim.Replies[0].Reply
	assert.Equal(t, mcpagent.Reply{Verb: "ACK", Component: "db", Agent: ada.id}, *ack)
	assert.Equal(t, []string{"CLAIM db"}, claim.Said)

	var again mcpagent.Answer
	ada.call("claim", map[string]any{"component": "nosuch"}, &again)
	require.True(t, again.Answered, again.Note)
	assert.False(t, again.Accepted)
	assert.Equal(t, "REJECT", again.Replies[0].Reply.Verb)
	assert.Contains(t, again.Note, "unknown component")

	var prog mcpagent.Answer
	ada.call("progress", map[string]any{"component": "db", "percent": 40, "note": "schema drafted"}, &prog)
	require.True(t, prog.Answered, prog.Note)
	assert.True(t, prog.Accepted, prog.Note)
	status := prog.Replies[len(prog.Replies)-1].Reply
	assert.Equal(t, "STATUS", status.Verb)
	assert.Equal(t, "building", status.State)
	assert.Equal(t, ada.id, status.Fields["owner"])
	assert.Equal(t, "40%", status.Fields["progress"])

	var ready mcpagent.Answer
	ada.call("ready", map[string]any{"component": "db", "ref": "ada/db"}, &ready)
	require.True(t, ready.Accepted, ready.Note)
	assert.Equal(t, &mcpagent.Reply{Verb: "REVIEW", Component: "db", Agent: ada.id, PR: "ada/db"}, ready.Replies[0].Reply)

	auditor.Await(b.foreman, "REVIEW db "+ada.id)
	auditor.Say("AUDIT db FAIL no index on orders.customer_id")
	fix, _ := ada.waitFor("FIX")
	assert.Equal(t, &mcpagent.Reply{Verb: "FIX", Component: "db", Agent: ada.id, Attempt: 1, Max: 3, Text: "no index on orders.customer_id"}, fix.Reply)

	ada.call("progress", map[string]any{"component": "db", "percent": 90, "note": "index added"}, &prog)
	require.True(t, prog.Accepted, prog.Note)
	ada.call("ready", map[string]any{"component": "db", "ref": "ada/db"}, &ready)
	require.True(t, ready.Accepted, ready.Note)

	auditor.Await(b.foreman, "REVIEW db "+ada.id)
	auditor.Say("AUDIT db PASS")
	merged, seen := ada.waitFor("MERGED")
	assert.Equal(t, "db", merged.Reply.Component)
	for _, e := range seen {
		assert.NotEqual(t, "TIMEOUT", verbOf(e), "no check-in was missed")
	}
	var st mcpagent.StatusResult
	ada.call("status", map[string]any{"component": "db"}, &st)
	require.True(t, st.Answered, st.Note)
	assert.Equal(t, "merged", st.Replies[0].Reply.State)
	assert.Empty(t, st.Holding, "nothing held after MERGED")
}

func verbOf(e mcpagent.Event) string {
	if e.Reply == nil {
		return ""
	}
	return e.Reply.Verb
}

// A builder that stops calling tools keeps its component only while
// foreman mcp's automatic check-ins say its last real progress, and loses
// it (TIMEOUT) once they stop, mcp.keepalive after its last tool call.
func TestMCPKeepaliveIsHonestAndBounded(t *testing.T) {
	const keepalive = 4 * time.Second
	b, watcher := startBuild(t, "  checkin_interval: 1s\n  missed_checkins: 3\n", keepalive.String(), "db")
	bo := b.mcpAgent("bo")
	var claim, prog mcpagent.Answer
	bo.call("claim", map[string]any{"component": "db"}, &claim)
	require.True(t, claim.Accepted, claim.Note)
	bo.call("progress", map[string]any{"component": "db", "percent": 35, "note": "halfway through the schema"}, &prog)
	require.True(t, prog.Accepted, prog.Note)
	lastCall := time.Now() // bo calls nothing more until foreman has timed it out

	var autos []string
	var autoAt time.Time
	deadline := time.After(patience)
	for timedOut := false; !timedOut; {
		select {
		case l := <-watcher.Lines():
			switch {
			case l.From == bo.id && strings.HasPrefix(l.Text, "PROGRESS db") && !strings.Contains(l.Text, "halfway"):
				autos = append(autos, l.Text)
				autoAt = l.At
			case l.From == b.foreman && strings.HasPrefix(l.Text, "TIMEOUT db"):
				assert.Equal(t, "TIMEOUT db "+bo.id, l.Text)
				assert.GreaterOrEqual(t, l.At.Sub(lastCall), keepalive, "not before the automatic check-ins were due to stop")
				assert.True(t, l.At.After(autoAt), "only after the last automatic check-in")
				timedOut = true
			}
		case <-deadline:
			t.Fatalf("db never timed out; automatic check-ins: %q", autos)
		}
	}
	require.GreaterOrEqual(t, len(autos), 2, "automatic check-ins kept db while bo was quiet: %q", autos)
	for _, a := range autos {
		assert.Regexp(t, `^PROGRESS db 35 automatic check-in by foreman mcp \(\d+\): the agent last called a tool [0-9.ms]+ ago; last real progress 35%, said [0-9.ms]+ ago$`, a)
	}

	_, seen := bo.waitFor("TIMEOUT")
	var note string
	for _, e := range seen {
		if e.Kind == mcpagent.KindNote {
			note = e.Text
		}
	}
	assert.Contains(t, note, "automatic check-ins on db stopped: no tool call for")
	assert.Contains(t, bo.stderr.String(), "agent id "+bo.id)
}

// Issue 38, item 6: one printed configuration for a team (foreman mcp
// --print-config --agents) starts each agent on a key of its own (made on
// its first start): two agents, two ids. A second foreman mcp on a key
// already in the room is refused, with one line saying why and what to do.
func TestOnePrintedConfigEachAgentItsOwnKey(t *testing.T) {
	b, watcher := startBuild(t, "  checkin_interval: 30m\n", "30m", "db", "api")
	cmd := exec.Command(bin, "mcp", "--print-config", "--agents", "b1,b2", b.config)
	cmd.Dir, cmd.Env = b.dir, roomtest.CleanEnv()
	out, err := cmd.Output()
	require.NoError(t, err)
	var doc struct {
		Servers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	require.NoError(t, json.Unmarshal(out, &doc), "%s", out)
	require.Len(t, doc.Servers, 2)
	ids := map[string]string{}
	for _, name := range []string{"b1", "b2"} {
		s := doc.Servers["foreman-"+name]
		c := exec.Command(bin, s.Args...) // as the client starts it: the printed command and arguments
		stderr := &roomtest.SyncBuffer{}
		c.Dir, c.Env, c.Stderr = t.TempDir(), roomtest.CleanEnv(), stderr
		client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: c}, nil)
		cancel()
		require.NoError(t, err, "%s", stderr)
		t.Cleanup(func() { _ = cs.Close() })
		a := &agent{t: t, cs: cs, stderr: stderr}
		var claim mcpagent.Answer
		a.call("claim", map[string]any{"component": map[string]string{"b1": "db", "b2": "api"}[name]}, &claim)
		require.True(t, claim.Accepted, claim.Note)
		ids[name] = claim.Replies[0].Reply.Agent
	}
	assert.NotEqual(t, ids["b1"], ids["b2"], "two agents, two ids")
	watcher.Await(b.foreman, "ACK db "+ids["b1"])
	watcher.Await(b.foreman, "ACK api "+ids["b2"])

	// b1's key again, from another program.
	again := exec.Command(bin, doc.Servers["foreman-b1"].Args...)
	again.Dir, again.Env, again.Stdin = t.TempDir(), roomtest.CleanEnv(), strings.NewReader("")
	stderr, err := again.CombinedOutput()
	require.Error(t, err, "%s", stderr)
	assert.Contains(t, string(stderr), ids["b1"]+" is in #build already: another program (an agent, or a second foreman mcp) joined with this key; give each agent its own")
	watcher.Say("STATUS db")
	status, _ := watcher.Await(b.foreman, "STATUS db")
	assert.Contains(t, status, "owner="+ids["b1"], "the agent in the room keeps its place")
}
