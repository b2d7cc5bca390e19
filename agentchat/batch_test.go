package agentchat

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// groups makes lines numbered from 1, each inner list one group; a group
// whose first line starts with "!" is urgent (the mark is dropped).
func groups(gs ...[]string) []Line {
	var out []Line
	for g, texts := range gs {
		for i, t := range texts {
			urgent := i == 0 && strings.HasPrefix(t, "!")
			out = append(out, Line{Seq: uint64(len(out) + 1), Text: strings.TrimPrefix(t, "!"), Group: uint64(g + 1), Urgent: urgent})
		}
	}
	return out
}

func queue(lines []Line) *sendQueue {
	q := &sendQueue{}
	q.push(lines)
	return q
}

// Urgency picks which group goes first; it never reorders a group: the OK
// that caused an escalation stays before it (contract section 5).
func TestUrgentGroupsGoFirstInTheirOwnOrder(t *testing.T) {
	q := queue(groups([]string{"TASKS a b", "ACK a @x"}, []string{"!OK UNDEPEND a b", "ESCALATE build cycle x"}, []string{"STATUS a pending"}))
	b := q.take(1<<20, 0)
	assert.Equal(t, 0, q.len())
	assert.Equal(t, []uint64{3, 4, 1, 2, 5}, b.seqs())
	assert.Equal(t, "OK UNDEPEND a b\nESCALATE build cycle x\nTASKS a b\nACK a @x\nSTATUS a pending", b.content)
}

func TestTakeSplitsOnLineBoundaries(t *testing.T) {
	q := queue(groups([]string{"aaaa", "bbbb"}, []string{"cccc", "dddd"}, []string{"!ERROR build x"}))
	b := q.take(21, 0) // "ERROR build x" is 13; "\naaaa" makes 19; "\nbbbb" would make 25
	assert.Equal(t, "ERROR build x\naaaa", b.content)
	assert.Equal(t, []uint64{5, 1}, b.seqs())
	assert.Equal(t, 3, q.len())
	b = q.take(16, 0)
	assert.Equal(t, "bbbb\ncccc\ndddd", b.content, "the rest of a split group, then the next whole group")
	assert.Nil(t, q.take(16, 0))
}

func TestTakeCutsALineTooLongForAnyMessage(t *testing.T) {
	long := strings.Repeat("é", 10) // 20 bytes
	q := queue(groups([]string{long}, []string{"next"}))
	b := q.take(9, 0)
	assert.Equal(t, strings.Repeat("é", 4), b.content, "cut at a character boundary")
	assert.Equal(t, 20, b.cut)
	assert.Equal(t, []uint64{1}, b.seqs())
	assert.Equal(t, 1, q.len())
}

// The room's limit is on the frame, where quotes and backslashes double.
func TestTakeCountsEscapes(t *testing.T) {
	quoted := strings.Repeat(`"`, 10)
	q := queue(groups([]string{quoted, quoted}))
	b := q.take(30, 0)
	assert.Equal(t, []uint64{1}, b.seqs(), "two lines of 10 quotes take 42 bytes in a frame")
	assert.Equal(t, 20, jsonSize(quoted))
}

func TestRequeuedBatchGoesBackInFront(t *testing.T) {
	q := queue(groups([]string{"a", "b"}, []string{"!c"}, []string{"d"}))
	b := q.take(3, 0) // "c\na"
	q.pushFront(b.lines)
	again := q.take(1<<20, 0)
	assert.Equal(t, []uint64{3, 1, 2, 4}, again.seqs())
}

func TestTakeEmpty(t *testing.T) {
	assert.Nil(t, (&sendQueue{}).take(10, 0))
}

func TestStampRoundTrip(t *testing.T) {
	b := &batch{lines: []Line{{Seq: 12}, {Seq: 13}, {Seq: 14}, {Seq: 18}, {Seq: 3, Resent: true}}}
	st := stampOf("foreman shop/7f3a9c", b)
	assert.Equal(t, "[foreman shop/7f3a9c #12-14,18,3 sent again after a restart: may repeat]", st.String())
	got, rest, ok := ParseStamp("ACK a @b\nTASKS x\n" + st.String())
	require.True(t, ok)
	assert.Equal(t, st, got)
	assert.Equal(t, "ACK a @b\nTASKS x", rest)
	assert.True(t, got.Contains(13))
	assert.False(t, got.Contains(15))
	for _, junk := range []string{"ACK a @b", "[not a stamp]", "[foreman #x]", "[foreman #5-2]", "[ #1]", "[a[b #1]"} {
		_, _, ok := ParseStamp(junk)
		assert.False(t, ok, junk)
	}
	assert.False(t, ValidTag("a#b"))
	assert.True(t, ValidTag("foreman shop/7f3a9c"))
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

// A plain line (a notice, not a numbered reply) goes out alone and
// unstamped, however it is queued among replies.
func TestPlainLinesGoAloneAndUnstamped(t *testing.T) {
	c := New(Config{Tag: "foreman shop/abc123"})
	c.Send(groups([]string{"TASKS a b", "ACK a @x"})...)
	c.Send(Line{Text: "ERROR build reload refused", Plain: true, Urgent: true})
	c.Send(Line{Seq: 3, Text: "STATUS a building", Group: 9})

	b := c.take()
	assert.Equal(t, "ERROR build reload refused", b.content, "urgent, so first; and alone")
	assert.True(t, b.plain)
	assert.Empty(t, b.stamp.Tag)
	assert.True(t, b.is(Message{Content: "ERROR build reload refused"}), "known again by its content")

	b = c.take()
	assert.Equal(t, "TASKS a b\nACK a @x\nSTATUS a building\n[foreman shop/abc123 #1-3]", b.content)
	assert.Nil(t, c.take())

	q := queue(groups([]string{"TASKS a"}))
	q.push([]Line{{Text: "notice", Plain: true}})
	assert.Equal(t, "TASKS a", q.take(1<<20, 0).content, "a plain line is not added to a message with others")
	assert.Equal(t, "notice", q.take(1<<20, 0).content)
}
