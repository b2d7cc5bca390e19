package protocol

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every reply the coordinator can say reads back into the parts it was
// made of.
func TestReadReplyRoundTrip(t *testing.T) {
	cases := []struct {
		said Reply
		want Heard
	}{
		{Tasks([]string{"db", "auth"}), Heard{Verb: ReplyTasks, Components: []string{"db", "auth"}}},
		{Tasks(nil), Heard{Verb: ReplyTasks}},
		{Tasks([]string{"db", "auth"}, "@b1", "@b2"), Heard{Verb: ReplyTasks, Components: []string{"db", "auth"},
			Text: "claim again: @b1 @b2 (your CLAIM came before foreman joined the room)"}},
		{Ack("api", "@b1", ""), Heard{Verb: ReplyAck, Subject: "api", Agent: "@b1"}},
		{Ack("api", "@b2", "after TIMEOUT of @b1: progress 60%"), Heard{Verb: ReplyAck, Subject: "api", Agent: "@b2", Text: "after TIMEOUT of @b1: progress 60%"}},
		{Reject("api", "@b2", "owned by @b1"), Heard{Verb: ReplyReject, Subject: "api", Agent: "@b2", Text: "owned by @b1"}},
		{Timeout("api", "@b1"), Heard{Verb: ReplyTimeout, Subject: "api", Agent: "@b1"}},
		{Retry("api", "@b1"), Heard{Verb: ReplyRetry, Subject: "api", Agent: "@b1"}},
		{Escalate("api", HardBlocker, "invalid_specification: x", "RESOLVE api"), Heard{Verb: ReplyEscalate, Subject: "api", Code: HardBlocker, Text: "invalid_specification: x; RESOLVE api"}},
		{Escalate(BuildSubject, Cycle, "a -> b -> a", ""), Heard{Verb: ReplyEscalate, Subject: "build", Code: Cycle, Text: "a -> b -> a"}},
		{Review("api", "@b1", "pr/1"), Heard{Verb: ReplyReview, Subject: "api", Agent: "@b1", PR: "pr/1"}},
		{Fix("api", "@b1", 1, 3, "no tests"), Heard{Verb: ReplyFix, Subject: "api", Agent: "@b1", Attempt: 1, Max: 3, Text: "no tests"}},
		{Wait("api", "@b1", "db"), Heard{Verb: ReplyWait, Subject: "api", Agent: "@b1", Dep: "db"}},
		{Unblocked("api", "@b1"), Heard{Verb: ReplyUnblocked, Subject: "api", Agent: "@b1"}},
		{MergedLine("api"), Heard{Verb: ReplyMerged, Subject: "api"}},
		{Complete("shop"), Heard{Verb: ReplyComplete, Subject: "shop"}},
		{StatusLine("api", "building", []Field{{"owner", "@b1"}, {"progress", "40%"}}),
			Heard{Verb: ReplyStatus, Subject: "api", State: "building", Fields: []Field{{"owner", "@b1"}, {"progress", "40%"}}}},
		{OK(Command{Verb: Release, Component: "api"}), Heard{Verb: ReplyOK, Subject: "api", Text: "RELEASE api"}},
		{OK(Command{Verb: Pause}), Heard{Verb: ReplyOK, Text: "PAUSE"}},
		{Released(Command{Verb: Release, Component: "api"}, "@b1"), Heard{Verb: ReplyOK, Subject: "api", Text: "RELEASE api from @b1"}},
		{Error("@b1", "PROGRESS: missing <pct>"), Heard{Verb: ReplyError, Subject: "@b1", Text: "PROGRESS: missing <pct>"}},
	}
	for _, tc := range cases {
		got, err := ReadReply(tc.said.Text)
		require.NoError(t, err, tc.said.Text)
		tc.want.Line = tc.said.Text
		assert.Equal(t, tc.want, got, tc.said.Text)
		if tc.said.Verb != ReplyTasks && tc.said.Verb != ReplyOK {
			assert.Equal(t, tc.said.Subject, got.Subject, tc.said.Text)
		}
	}
	h, _ := ReadReply(Tasks([]string{"db"}, "@b1", "@b2").Text)
	assert.Equal(t, []string{"@b1", "@b2"}, ClaimAgain(h.Text))
	h, _ = ReadReply("STATUS api review owner=@b1 pr=x")
	assert.Equal(t, "@b1", h.Field("owner"))
	assert.Equal(t, "", h.Field("progress"))
}

// OK's text is the command as read, perhaps followed by more (OK RELEASE
// api from @b1): the command reads back either way; a bad one does not.
func TestReadConfirmed(t *testing.T) {
	for text, want := range map[string]Command{
		"RELEASE api":                  {Verb: Release, Component: "api"},
		"RELEASE api from @b1":         {Verb: Release, Component: "api"},
		"ASSIGN api @b2 (b2)":          {Verb: Assign, Component: "api", Agent: "@b2"},
		"RESOLVE api the tool is here": {Verb: Resolve, Component: "api", Text: "the tool is here"},
		"PAUSE":                        {Verb: Pause},
	} {
		got, err := ReadConfirmed(text)
		require.NoError(t, err, text)
		assert.Equal(t, want, got, text)
	}
	for _, text := range []string{"RELEASE", "RELEASE build from @b1", "HELLO api", ""} {
		_, err := ReadConfirmed(text)
		assert.Error(t, err, text)
	}
	_, err := Read("RELEASE api from @b1")
	assert.Error(t, err, "a command said with more is still refused from anyone else")
}

func TestReadReplyRefusesWhatIsNoReply(t *testing.T) {
	for line, want := range map[string]string{
		"CLAIM api":          `"CLAIM" is not a reply verb`,
		"":                   `"" is not a reply verb`,
		"ACK api":            "ACK: missing the agent",
		"FIX api @b1 x text": `FIX: "x" is not an attempt n/max`,
		"FIX api @b1 1/y":    `FIX: "1/y" is not an attempt n/max`,
		"WAIT api @b1":       "WAIT: missing the dependency",
		"ESCALATE api":       "ESCALATE: missing the escalation code",
		"MERGED":             "MERGED: missing the subject",
	} {
		_, err := ReadReply(line)
		assert.EqualError(t, err, want, line)
	}
}

func FuzzReadReply(f *testing.F) {
	for _, s := range []string{"TASKS a b", "FIX a @b 1/3 x", "STATUS a building owner=@b x", "OK RELEASE a", "ESCALATE build cycle a -> b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		h, err := ReadReply(line)
		if err == nil && h.Verb == NoReply {
			t.Fatalf("%q read as a reply without a verb", line)
		}
	})
}
