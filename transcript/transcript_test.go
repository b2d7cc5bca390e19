package transcript

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parse(t *testing.T, text string) *Transcript {
	t.Helper()
	tr, err := Parse("test.txt", strings.NewReader(text))
	require.NoError(t, err)
	return tr
}

func TestParseDirectivesAnywhere(t *testing.T) {
	tr := parse(t, `
00:00:00 @foreman TASKS a
!component a
!role operator @op @op2
!set checkin_interval=2m merge=external
!ignore tasks ACK
!end 01:00:00
!build b1
!coordinator @bot
00:00:01.250 @x  CLAIM a
`)
	assert.Equal(t, "b1", tr.Build)
	assert.Equal(t, "@bot", tr.Coordinator)
	assert.Equal(t, []string{"@op", "@op2"}, tr.Roles.Operators)
	assert.Equal(t, 2*time.Minute, tr.Rules.CheckinInterval)
	assert.True(t, tr.Ignore["TASKS"] && tr.Ignore["ACK"])
	assert.Equal(t, time.Hour, tr.End)
	require.Len(t, tr.Lines, 2)
	assert.False(t, tr.Lines[0].Said, "@foreman is not the coordinator here")
	assert.Equal(t, 1250*time.Millisecond, tr.Lines[1].At)
	assert.Equal(t, "CLAIM a", tr.Lines[1].Text)
	assert.Equal(t, 10, tr.Lines[1].Pos)
}

func TestParseErrorsPointAtTheLine(t *testing.T) {
	cases := map[string]string{
		"!component a\n00:00:01 @x CLAIM a\n00:00:00 @x CLAIM a\n": "test.txt:3: time 00:00:00 is before",
		"!component a\n0:00:01 @x CLAIM a\n":                       "test.txt:2: \"0:00:01\" is not a time",
		"!component a\n00:61:00 @x CLAIM a\n":                      "test.txt:2:",
		"!component a\n00:00:01\n":                                 "test.txt:2: missing sender",
		"!component a\n!set checkin=1m\n":                          "test.txt:2: checkin: unknown rule",
		"!component a\n!set missed_checkins=0\n":                   "test.txt:2: missed_checkins:",
		"!component a\n!frobnicate\n":                              "test.txt:2: unknown directive !frobnicate",
		"!component a\n!role boss @x\n":                            "test.txt:2: unknown role",
		"\n!component a b\n":                                       "test.txt:2: a depends on b, which no !component declares",
		"!component a\n!component a\n":                             "test.txt:2: component a is declared twice",
		"!component a!\n":                                          "test.txt:1:",
		"!component a\n!members 00:00:01\n":                        "test.txt:2: usage: !members",
		"!component a\n!members 00:00:01 b1=x\n":                   "test.txt:2: !members: \"b1\" is not a sender id",
	}
	for text, want := range cases {
		_, err := Parse("test.txt", strings.NewReader(text))
		require.Error(t, err, text)
		assert.Contains(t, err.Error(), want)
	}
}

func TestTimes(t *testing.T) {
	for s, d := range map[string]time.Duration{
		"00:00:00":     0,
		"01:02:03":     time.Hour + 2*time.Minute + 3*time.Second,
		"00:00:00.005": 5 * time.Millisecond,
		"100:00:00":    100 * time.Hour,
	} {
		got, err := ParseTime(s)
		require.NoError(t, err, s)
		assert.Equal(t, d, got)
		assert.Equal(t, s, FormatTime(d))
	}
	for _, bad := range []string{"", "1:00:00", "00:00", "00:00:60", "00:00:00.5", "aa:bb:cc", "-1:00:00"} {
		_, err := ParseTime(bad)
		assert.Error(t, err, bad)
	}
}

func TestReplayReportsMissingAndExtra(t *testing.T) {
	tr := parse(t, `!component a
00:00:00 @foreman TASKS a
00:00:01 @b CLAIM a
00:00:01 @foreman ACK a @c
00:00:02 @foreman MERGED a
`)
	res, err := Replay(tr)
	require.NoError(t, err)
	assert.False(t, res.Passed())
	var out strings.Builder
	res.WriteDiff(&out)
	assert.Contains(t, out.String(), "+ 00:00:01 ACK a @b")
	assert.Contains(t, out.String(), "- 00:00:01 ACK a @c    (expected at test.txt:4, never said)")
	assert.Contains(t, out.String(), "- 00:00:02 MERGED a")
}

func TestReplayIgnoreAndPrefix(t *testing.T) {
	const body = `
00:00:01 @b CLAIM a
00:00:02 @c CLAIM a
00:00:02 @foreman REJECT a @c
`
	res, err := Replay(parse(t, "!component a\n!ignore TASKS ACK\n"+body))
	require.NoError(t, err)
	assert.True(t, res.Passed(), "unlisted TASKS and ACK are ignored; the REJECT's reason is left free")

	res, err = Replay(parse(t, "!component a\n!ignore TASKS\n"+body))
	require.NoError(t, err)
	assert.Equal(t, 1, res.Failures, "the unlisted ACK fails the replay")
}

func TestWriterRoundTrip(t *testing.T) {
	tr := parse(t, "!build shop\n!component a\n!component b a\n!role auditor @aud\n!set checkin_interval=1m\n")
	var buf bytes.Buffer
	w := NewWriter(&buf, tr.Config())
	w.Said(0, []string{"TASKS a"})
	w.Heard(1500*time.Millisecond, "@b1", "CLAIM a")
	w.Said(1500*time.Millisecond, []string{"ACK a @b1"})
	w.Heard(3*time.Minute+1500*time.Millisecond, "@b1", "  ")
	require.NoError(t, w.Flush())
	back := parse(t, buf.String())
	assert.Equal(t, tr.Config(), back.Config())
	res, err := Replay(back)
	require.NoError(t, err)
	assert.True(t, res.Passed(), buf.String())
	assert.Contains(t, buf.String(), "00:00:01.500 @b1 CLAIM a\n")
}

// The writer records members as the engine keeps them, once each: a name
// with a space of any kind as one word, a member shown again as nothing,
// a new name as a change, and the name a sender's lines came with before
// its first line. Replayed, the engine knows what the live one knew.
func TestWriterRecordsMembers(t *testing.T) {
	tr := parse(t, "!component a\n!role operator @op\n")
	var buf bytes.Buffer
	w := NewWriter(&buf, tr.Config())
	w.Said(0, []string{"TASKS a"})
	w.Members(time.Second, []coordinator.Member{{ID: "@b1aa", Name: "b 1\u00a0x"}, {ID: "@b2bb"}, {ID: "bad id"}})
	w.Members(time.Second, []coordinator.Member{{ID: "@b1aa", Name: "b_1_x"}, {ID: "@b2bb"}})
	w.Named(2*time.Second, "@op", "olga")
	w.Named(2*time.Second, "@op", "olga")
	w.Heard(2*time.Second, "@op", "ASSIGN a @olga")
	w.Said(2*time.Second, []string{"REJECT a @op @olga is not a sender id; olga is the display name of @op"})
	w.Members(3*time.Second, []coordinator.Member{{ID: "@b2bb", Name: "two"}})
	w.Heard(3*time.Second, "@op", "ASSIGN a @b2bb")
	w.Said(3*time.Second, []string{"OK ASSIGN a @b2bb", "ACK a @b2bb"})
	require.NoError(t, w.Flush())
	out := buf.String()
	assert.Equal(t, 1, strings.Count(out, "!members 00:00:01 @b1aa=b_1_x @b2bb\n"), out)
	assert.Equal(t, 1, strings.Count(out, "!members 00:00:02 @op=olga\n"), out)
	assert.Contains(t, out, "!members 00:00:03 @b2bb=two\n")
	assert.Equal(t, 3, strings.Count(out, "!members"), out)
	res, err := Replay(parse(t, out))
	require.NoError(t, err)
	assert.True(t, res.Passed(), out)
}

// Spend is recorded as the engine was handed it and read back the same:
// an agent's times before the build's start stay before it (written
// -HH:MM:SS; they were read as the start, where a holding may begin), a
// delta's series and a request's identity are kept, so a replay counts
// and dedupes as the live engine did.
func TestWriterRecordsSpendAsHanded(t *testing.T) {
	tr := parse(t, "!build shop\n!component a\n")
	var buf bytes.Buffer
	w := NewWriter(&buf, tr.Config())
	spends := []coordinator.Spend{
		{Agent: "@b1", Source: coordinator.SpendRequest, At: Epoch.Add(-90 * time.Second), ID: "ab/12", Cost: coordinator.Cost{USD: 20_000, Tokens: 1200}},
		{Agent: "@b1", Source: coordinator.SpendCumulative, At: Epoch.Add(2 * time.Second), Series: "cost#1", Start: Epoch.Add(-time.Hour - 500*time.Millisecond), Cost: coordinator.Cost{USD: 500_000}},
		{Agent: "@b1", Source: coordinator.SpendDelta, At: Epoch.Add(3 * time.Second), Series: "cost#2", Start: Epoch.Add(-2 * time.Second), Cost: coordinator.Cost{USD: 10_000}},
		{Agent: "@b1", Source: coordinator.SpendDelta, At: Epoch.Add(4 * time.Second), Cost: coordinator.Cost{USD: 10_000}},
	}
	for i, s := range spends {
		w.Spend(time.Duration(i+5)*time.Second, Epoch, s)
	}
	require.NoError(t, w.Flush())
	back := parse(t, buf.String())
	require.Len(t, back.Timed, len(spends), buf.String())
	for i, s := range spends {
		assert.Equal(t, s, back.Timed[i].Spend, "%d:\n%s", i, buf.String())
	}
	assert.Contains(t, buf.String(), "!spend 00:00:05 @b1 request at=-00:01:30 id=ab%2F12 0.02 1200t\n")
}
