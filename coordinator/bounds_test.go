package coordinator

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/protocol"
)

func started(t *testing.T, mutate func(*Config)) *Engine {
	t.Helper()
	e := newEngine(t, mutate)
	e.doStart(t0)
	return e
}

// A flood of malformed lines in one message costs one ERROR, and reading
// stops after MaxCommands protocol lines.
func TestFloodOfMalformedLinesGetsOneError(t *testing.T) {
	e := started(t, nil)
	out := e.doReceive(msg("@m", strings.Repeat("CLAIM !\n", 131000), time.Second))
	require.Len(t, out, 1)
	assert.True(t, strings.HasPrefix(out[0], "ERROR @m only the first 100 commands of a message are read; send the rest again in another message; 100 malformed lines in this message, the first: CLAIM: "), out[0])
	assert.LessOrEqual(t, len(out[0]), 2*protocol.MaxText)
}

// Well-formed commands past the bound are not read; what was read is
// answered in order, and the ERROR comes last when no line was malformed.
func TestCommandsPastTheBoundAreRefused(t *testing.T) {
	e := started(t, nil)
	out := e.doReceive(msg("@m", strings.Repeat("CLAIM nope\nchat in between\n", 150), time.Second))
	require.Len(t, out, MaxCommands+1)
	for _, l := range out[:MaxCommands] {
		assert.True(t, strings.HasPrefix(l, "REJECT nope @m unknown component"), l)
	}
	assert.Equal(t, "ERROR @m only the first 100 commands of a message are read; send the rest again in another message", out[MaxCommands])
}

// One ERROR per message, in the place of the first malformed line, so the
// engine's order is kept: it names how many lines were malformed.
func TestOneErrorPerMessageInItsPlace(t *testing.T) {
	e := started(t, nil)
	out := e.doReceive(msg("@m", "PROGRESS db lots\nCLAIM db\nCLAIM !", time.Second))
	require.Len(t, out, 2)
	assert.True(t, strings.HasPrefix(out[0], "ERROR @m 2 malformed lines in this message, the first: PROGRESS: "), out[0])
	assert.Equal(t, "ACK db @m", out[1])

	out = e.doReceive(msg("@n", "CLAIM !", 2*time.Second))
	require.Len(t, out, 1)
	assert.True(t, strings.HasPrefix(out[0], "ERROR @n CLAIM: "), "a single malformed line is answered as before: %s", out[0])
}

// The whole board of a big build is listed at most once per BoardEvery,
// whoever asks; the others are pointed at the listing in the room.
func TestWholeBoardAtMostOncePerPeriod(t *testing.T) {
	e := started(t, func(c *Config) {
		c.Components = nil
		for i := range 2 * MaxCommands {
			c.Components = append(c.Components, Component{Name: fmt.Sprintf("c%d", i)})
		}
	})
	assert.Len(t, e.doReceive(msg("@a", "STATUS", time.Minute)), 2*MaxCommands)
	out := e.doReceive(msg("@b", "STATUS\nSTATUS c7", time.Minute+time.Second))
	require.Len(t, out, 2)
	assert.Equal(t, "ERROR @b the whole board (200 components) was listed at 00:01:00 (build time), less than 10s ago; ask STATUS <component>, or see the board (foreman status)", out[0])
	assert.True(t, strings.HasPrefix(out[1], "STATUS c7 pending"), "one component is always answered")
	assert.Len(t, e.doReceive(msg("@b", "STATUS", time.Minute+BoardEvery)), 2*MaxCommands)

	small := started(t, nil)
	for i := range 3 {
		assert.Len(t, small.doReceive(msg("@a", "STATUS", time.Duration(i)*time.Second)), 2, "a small board is always listed")
	}
}

// ASSIGN takes a sender id the room has shown; a display name gets the ids
// of the senders who go by it.
func TestAssignNamesAKnownSender(t *testing.T) {
	e := started(t, func(c *Config) { c.Roles = Roles{Operators: []string{"@op"}} })
	e.doReceive(Message{From: "@7f3a9c01", Name: "olga", At: at(time.Second), Content: "hello"})
	e.doReceive(Message{From: "@11aa22bb", Name: "Olga", At: at(time.Second), Content: "hi"})
	out := e.doReceive(msg("@op", "ASSIGN db @olga", 2*time.Second))
	assert.Equal(t, []string{"REJECT db @op @olga is not a sender id; olga is the display name of @11aa22bb @7f3a9c01"}, out)
	out = e.doReceive(msg("@op", "ASSIGN db @7f3a9c01", 3*time.Second))
	assert.Equal(t, []string{"OK ASSIGN db @7f3a9c01", "ACK db @7f3a9c01"}, out)
	out = e.doReceive(msg("@op", "ASSIGN api @op", 4*time.Second))
	assert.Equal(t, "OK ASSIGN api @op", out[0], "one in the roles may be named")
}

// SIGHUP's reload carries the roles: a new operator may command at once,
// and a snapshot keeps the roles as reloaded.
func TestReloadChangesRoles(t *testing.T) {
	e := started(t, nil)
	assert.Equal(t, []string{"ERROR @new only operators may PAUSE; ask one of them"}, e.doReceive(msg("@new", "PAUSE", time.Second)))
	rs := Roles{Operators: []string{"@new"}}
	e.Step(Event{Kind: KindReload, At: at(2 * time.Second), Components: e.cfg.Components, Roles: &rs})
	assert.Equal(t, []string{"OK PAUSE"}, e.doReceive(msg("@new", "PAUSE", 3*time.Second)))
	configured := e.cfg
	configured.Roles = Roles{}
	back, err := Restore(configured, e.Snapshot())
	require.NoError(t, err)
	assert.Equal(t, []string{"OK RESUME"}, back.doReceive(msg("@new", "RESUME", 4*time.Second)))
}

// Senders without a display name are not "-": ASSIGN @- names nobody.
func TestNamelessSendersHaveNoName(t *testing.T) {
	e := started(t, func(c *Config) { c.Roles = Roles{Operators: []string{"@op"}} })
	e.doReceive(Message{From: "@7f3a9c01", At: at(time.Second), Content: "hello"})
	out := e.doReceive(msg("@op", "ASSIGN db @-", 2*time.Second))
	assert.Equal(t, []string{"REJECT db @op @- has not been seen in this room; name a sender id, as STATUS shows owners"}, out)
}

// A snapshot shares no roles with the engine, which a reload may change
// while the shell encodes the snapshot.
func TestSnapshotOwnsItsRoles(t *testing.T) {
	e := started(t, func(c *Config) { c.Roles = Roles{Operators: []string{"@op"}} })
	s := e.Snapshot()
	rs := Roles{Operators: []string{"@new"}}
	e.Step(Event{Kind: KindReload, At: at(time.Second), Components: e.cfg.Components, Roles: &rs})
	assert.Equal(t, []string{"@op"}, s.Roles.Operators)
}
