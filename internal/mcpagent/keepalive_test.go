package mcpagent

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/protocol"
)

const me = "@00000000000000aa"

func heard(t *testing.T, line string) protocol.Heard {
	t.Helper()
	h, err := protocol.ReadReply(line)
	require.NoError(t, err)
	return h
}

func said(t *testing.T, line string) protocol.Command {
	t.Helper()
	c, err := protocol.Read(line)
	require.NoError(t, err)
	return c
}

// On a virtual clock: check-ins go out three quarters of an interval after
// the last line, with the agent's last real percentage, until the bound
// after its last tool call; then a note says they stopped, once.
func TestKeepaliveChecksInHonestlyUntilTheBound(t *testing.T) {
	t0 := time.Unix(1000, 0)
	k := newKeepalive(time.Minute, 5*time.Minute, t0)
	assert.True(t, k.next().IsZero(), "nothing owned, nothing due")
	k.heard(heard(t, "ACK db "+me), me, t0)
	assert.Equal(t, t0.Add(45*time.Second), k.next())
	k.said(said(t, "PROGRESS db 40 schema"), t0.Add(10*time.Second))
	assert.Equal(t, t0.Add(55*time.Second), k.next(), "a real line is a check-in")
	assert.Empty(t, k.due(t0.Add(54*time.Second)))

	var lines []string
	at := t0.Add(55 * time.Second)
	for ; len(lines) < 20; at = k.next() {
		got := k.due(at)
		require.Len(t, got, 1)
		if got[0].Stopped {
			assert.Contains(t, got[0].Note, "automatic check-ins on db stopped: no tool call for 5m")
			break
		}
		lines = append(lines, got[0].Line)
	}
	require.Len(t, lines, 6, "every 45s from 0:55 while within 5m of the last call: %q", lines)
	assert.Equal(t, "PROGRESS db 40 automatic check-in by foreman mcp (1): the agent last called a tool 55s ago; last real progress 40%, said 45s ago", lines[0])
	for _, l := range lines {
		c := said(t, l) // each is a valid protocol line
		assert.Equal(t, 40, c.Percent)
	}
	assert.True(t, k.next().IsZero(), "stopped until the agent calls a tool")
	assert.Empty(t, k.due(at.Add(time.Hour)))

	k.call(at.Add(time.Minute))
	assert.False(t, k.next().IsZero(), "a tool call brings them back")
	assert.True(t, k.owned()[0].CheckinsDue)
}

func TestKeepaliveFollowsForemansReplies(t *testing.T) {
	t0 := time.Unix(1000, 0)
	k := newKeepalive(time.Minute, time.Hour, t0)
	k.heard(heard(t, "ACK db "+me+" after TIMEOUT of @00000000000000bb: progress 60%"), me, t0)
	got := k.due(t0.Add(45 * time.Second))
	require.Len(t, got, 1)
	assert.Contains(t, got[0].Line, "PROGRESS db 60 ", "the handed-over progress, said as such")
	assert.Contains(t, got[0].Line, "no progress said yet; 60% handed over")

	k.said(said(t, "READY db pr/1"), t0.Add(time.Minute))
	assert.True(t, k.next().IsZero(), "in review: no check-ins")
	k.heard(heard(t, "FIX db "+me+" 1/3 no tests"), me, t0.Add(2*time.Minute))
	assert.Equal(t, t0.Add(2*time.Minute+45*time.Second), k.next(), "FIX restarts the clock")
	k.heard(heard(t, "ESCALATE db audit-overdue late"), me, t0.Add(2*time.Minute))
	assert.False(t, k.next().IsZero(), "audit-overdue holds nothing")
	k.heard(heard(t, "ESCALATE db need-info x; ADD x"), me, t0.Add(2*time.Minute))
	assert.True(t, k.next().IsZero(), "held: no timers")
	k.heard(heard(t, "ACK db "+me), me, t0.Add(3*time.Minute))
	assert.False(t, k.next().IsZero(), "RESOLVE's ACK")
	k.heard(heard(t, "STATUS db review owner="+me), me, t0.Add(3*time.Minute))
	assert.True(t, k.next().IsZero(), "STATUS says where it is")
	k.heard(heard(t, "STATUS db blocked owner="+me+" progress=70%"), me, t0.Add(3*time.Minute))
	assert.False(t, k.next().IsZero())

	for _, end := range []string{"TIMEOUT db " + me, "RETRY db " + me, "MERGED db", "ACK db @00000000000000bb", "STATUS db pending"} {
		k.heard(heard(t, "ACK db "+me), me, t0)
		k.heard(heard(t, end), me, t0)
		assert.Empty(t, k.owned(), end)
	}
	k.heard(heard(t, "ACK db "+me), me, t0)
	k.said(said(t, "ABORT db phase_incomplete"), t0)
	assert.Empty(t, k.owned())
	k.heard(heard(t, "TIMEOUT db @00000000000000bb"), me, t0)
	assert.Empty(t, k.owned(), "another's TIMEOUT is not ours")
}

func TestKeepaliveOff(t *testing.T) {
	t0 := time.Unix(1000, 0)
	k := newKeepalive(time.Minute, 0, t0)
	k.heard(heard(t, "ACK db "+me), me, t0)
	assert.True(t, k.next().IsZero())
	assert.Empty(t, k.due(t0.Add(time.Hour)))
}

// An agent blocked in a tool call (wait()) is alive: check-ins go on past
// the bound while it lasts, and the bound counts from its end.
func TestKeepaliveWhileTheAgentWaitsInATool(t *testing.T) {
	t0 := time.Unix(1000, 0)
	k := newKeepalive(time.Minute, 2*time.Minute, t0)
	k.heard(heard(t, "ACK db "+me), me, t0)
	k.begin(t0)
	var at time.Time
	for i := 0; i < 10; i++ {
		at = k.next()
		got := k.due(at)
		require.Len(t, got, 1)
		require.False(t, got[0].Stopped, "check-in %d at %s", i, at.Sub(t0))
		assert.Contains(t, got[0].Line, "PROGRESS db 0 automatic check-in by foreman mcp")
		assert.Contains(t, got[0].Line, "the agent is waiting in a tool call; no progress said yet")
	}
	k.end(at)
	n := 0
	for !k.next().IsZero() {
		if got := k.due(k.next()); !got[0].Stopped {
			n++
		}
	}
	assert.Equal(t, 2, n, "within 2m of the call's end: at 45s and 1m30s")
}
