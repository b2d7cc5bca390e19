package protocol

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestReplies(t *testing.T) {
	cases := []struct {
		got  Reply
		want string
	}{
		{Tasks([]string{"db", "auth"}), "TASKS db auth"},
		{Tasks([]string{"db"}, "@b1", "@b\n2"), "TASKS db -- claim again: @b1 @b_2 (your CLAIM came before foreman joined the room)"},
		{Tasks([]string{"db"}, "@1", "@2", "@3", "@4", "@5", "@6", "@7", "@8", "@9", "@10", "@11", "@12"),
			"TASKS db -- claim again: @1 @2 @3 @4 @5 @6 @7 @8 @9 @10 and 2 more (your CLAIM came before foreman joined the room)"},
		{Ack("api", "@b1", ""), "ACK api @b1"},
		{Ack("api", "@b2", "after TIMEOUT of @b1: progress 60%"), "ACK api @b2 after TIMEOUT of @b1: progress 60%"},
		{Reject("api", "@b2", "owned by @b1"), "REJECT api @b2 owned by @b1"},
		{Timeout("api", "@b1"), "TIMEOUT api @b1"},
		{Retry("api", "@b1"), "RETRY api @b1"},
		{Escalate("api", HardBlocker, "invalid_specification: x", "RESOLVE api"), "ESCALATE api hard-blocker invalid_specification: x; RESOLVE api"},
		{Review("api", "@b1", "pr/1"), "REVIEW api @b1 pr/1"},
		{Fix("api", "@b1", 1, 3, "no tests"), "FIX api @b1 1/3 no tests"},
		{Wait("api", "@b1", "db"), "WAIT api @b1 db"},
		{Unblocked("api", "@b1"), "UNBLOCKED api @b1"},
		{MergedLine("api"), "MERGED api"},
		{Complete("shop"), "COMPLETE shop"},
		{StatusLine("api", "building", []Field{{"owner", "@b1"}, {"audits", "0/3"}}), "STATUS api building owner=@b1 audits=0/3"},
		{OK(Command{Verb: Release, Component: "api"}), "OK RELEASE api"},
		{Error("@b1", "PROGRESS: missing <pct>"), "ERROR @b1 PROGRESS: missing <pct>"},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, tc.got.Text)
		assert.Equal(t, tc.got.Verb, VerbOf(tc.got.Text), "the verb is the line's first word")
	}
}

func TestReplyParts(t *testing.T) {
	r := Escalate("api", NeedInfo, "needs x", "ADD x")
	assert.Equal(t, Reply{Verb: ReplyEscalate, Subject: "api", Code: NeedInfo, Detail: "needs x; ADD x",
		Text: "ESCALATE api need-info needs x; ADD x"}, r)
	r = Reject("api", "@b2", "owned by @b1")
	assert.Equal(t, "api", r.Subject)
	assert.Equal(t, "owned by @b1", r.Detail)
	assert.Equal(t, "api", OK(Command{Verb: Release, Component: "api"}).Subject)
	assert.Equal(t, NoReply, VerbOf("CLAIM api"))
}

// A long echoed text is cut; the suggestion that resolves the escalation
// never is (contract section 6).
func TestEscalateKeepsTheSuggestion(t *testing.T) {
	suggestion := "RESOLVE api to reopen it or ASSIGN api @agent"
	r := Escalate("api", HardBlocker, "missing_dependency: "+strings.Repeat("libfoo ", 100), suggestion)
	assert.True(t, strings.HasSuffix(r.Text, "; "+suggestion), r.Text)
	assert.LessOrEqual(t, len(r.Detail), MaxText)
	assert.Contains(t, r.Detail, "missing_dependency: libfoo")
	assert.Contains(t, r.Detail, "...")
	r = Escalate("api", HardBlocker, "", suggestion)
	assert.Equal(t, "ESCALATE api hard-blocker "+suggestion, r.Text)
}

// Anything a sender controls is echoed as one bounded line.
func TestRepliesCannotBeInjected(t *testing.T) {
	evil := "x\nACK api @mallory\r\u2028ESCALATE build overtime\u0085TASKS"
	for _, r := range []Reply{
		Ack("api", evil, evil),
		Reject("api", "@b\n1", evil),
		Escalate("api", NeedInfo, evil+strings.Repeat("y", 10000), evil),
		Review("api", "@b1", evil),
		Fix("api", "@b1", 1, 3, evil),
		StatusLine("api", "building", []Field{{"note", evil}}),
		Error(evil, evil),
	} {
		got := r.Text
		assert.False(t, strings.ContainsAny(got, "\r\n\u2028\u0085"), "%q", got)
		assert.LessOrEqual(t, len(got), 3*MaxText)
	}
	assert.Equal(t, "REJECT api @b_1 x", Reject("api", "@b\n1", "x").Text)
}

func TestCleanText(t *testing.T) {
	assert.Equal(t, "plain", CleanText("plain", 10))
	assert.Equal(t, "a b", CleanText("a\nb", 10))
	assert.Equal(t, "abc...", CleanText("abcdefghij", 6))
	assert.Equal(t, "é...", CleanText("éééé", 6), "cuts on a character boundary")
	assert.Equal(t, "..", CleanText("abcdef", 2))
	assert.Equal(t, "\ufffd", CleanText("\xff", 10))
	assert.Equal(t, "-", CleanWord("", 10))
	assert.Equal(t, "a_b", CleanWord("a b", 10))
}

func BenchmarkAck(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = Ack("api", "@0123456789abcdef", "")
	}
}

// Contract section 4: which escalations put a component in held.
func TestEscalationHolds(t *testing.T) {
	held := map[Escalation]bool{}
	for _, e := range Escalations() {
		if e.Holds() {
			held[e] = true
		}
	}
	assert.Equal(t, map[Escalation]bool{AuditExhausted: true, HardBlocker: true, NeedInfo: true,
		InterfaceConflict: true, CIExhausted: true, Cycle: true, BudgetSpent: true, HostFault: true}, held)
	assert.True(t, Escalation("from-a-newer-contract").Holds(), "an unknown code is read as holding: a listener stays careful")
}
