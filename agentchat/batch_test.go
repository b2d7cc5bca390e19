package agentchat

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func lines(texts ...string) []Line {
	out := make([]Line, len(texts))
	for i, t := range texts {
		out[i] = Line{Seq: uint64(i + 1), Text: t}
	}
	return out
}

func TestTakeBatchPutsUrgentLinesFirst(t *testing.T) {
	b, rest := takeBatch(lines("TASKS a b", "ACK a @x", "ESCALATE a hard-blocker x", "error @y bad", "STATUS a pending"), 1<<20)
	assert.Nil(t, rest)
	assert.Equal(t, []uint64{3, 4, 1, 2, 5}, b.seqs())
	assert.Equal(t, "ESCALATE a hard-blocker x\nerror @y bad\nTASKS a b\nACK a @x\nSTATUS a pending", b.content)
}

func TestTakeBatchSplitsOnLineBoundaries(t *testing.T) {
	queued := lines("aaaa", "bbbb", "cccc", "dddd", "ERROR x")
	b, rest := takeBatch(queued, 14) // "ERROR x\naaaa" is 12; adding "\nbbbb" makes 17
	assert.Equal(t, "ERROR x\naaaa", b.content)
	assert.Equal(t, []uint64{5, 1}, b.seqs())
	require.Len(t, rest, 3)
	b, rest = takeBatch(rest, 13)
	assert.Equal(t, "bbbb\ncccc", b.content)
	b, rest = takeBatch(rest, 14)
	assert.Equal(t, "dddd", b.content)
	assert.Nil(t, rest)
}

func TestTakeBatchCutsALineTooLongForAnyMessage(t *testing.T) {
	long := strings.Repeat("é", 10) // 20 bytes
	b, rest := takeBatch(lines(long, "next"), 9)
	assert.Equal(t, strings.Repeat("é", 4), b.content, "cut at a character boundary")
	assert.Equal(t, 20, b.cut)
	assert.Equal(t, []uint64{1}, b.seqs())
	assert.Len(t, rest, 1)
}

func TestTakeBatchEmpty(t *testing.T) {
	b, rest := takeBatch(nil, 10)
	assert.Nil(t, b)
	assert.Nil(t, rest)
}

func TestRecentForgetsTheOldest(t *testing.T) {
	r := newRecent(2)
	r.add("a")
	r.add("b")
	r.add("b")
	assert.True(t, r.has("a"))
	r.add("c")
	assert.False(t, r.has("a"))
	assert.True(t, r.has("b"))
	assert.True(t, r.has("c"))
}

func TestUnlockTime(t *testing.T) {
	got := unlockTime("New identity — sending unlocks at 2026-03-01T10:20:30.456Z")
	assert.True(t, got.Equal(time.Date(2026, 3, 1, 10, 20, 30, 456e6, time.UTC)), got)
	assert.True(t, unlockTime("no time here").IsZero())
}
