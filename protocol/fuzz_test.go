package protocol

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzParse reads arbitrary lines. It must never panic; a valid command must
// format to a line that reads back as the same command; and no reply built
// from what was read may contain a line break.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"CLAIM api", "PROGRESS api 50% note", "BLOCKED api db x", "CONFLICT a b files d",
		"READY api https://x/pr/1", "ABORT api timeout", "AUDIT api FAIL why", "CI api CONFLICT",
		"STATUS", "ASSIGN api @b1", "RESOLVE api n", "ADD c a b", "PAUSE", "@foreman **CLAIM** api",
		"- `READY api pr`", "> CLAIM api", "PROGRESS api 50\x00\n\r\u2028", "*`*CLAIM a", "_**_CLAIM a",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		cmd, err := bot.Read(line)
		if err != nil {
			if cmd.Verb == NoVerb {
				t.Fatalf("error without a verb: %v", err)
			}
			assertOneLine(t, Error("@sender", err.Error()))
			return
		}
		if cmd.Verb == NoVerb {
			return
		}
		canonical := cmd.String()
		again, err := bot.Read(canonical)
		if err != nil {
			t.Fatalf("%q read as %+v formats to %q, which fails: %v", line, cmd, canonical, err)
		}
		if !reflect.DeepEqual(cmd, again) {
			t.Fatalf("%q read as %+v formats to %q, which reads as %+v", line, cmd, canonical, again)
		}
		assertOneLine(t, OK(cmd))
		assertOneLine(t, Ack(cmd.Component, cmd.Agent, cmd.Text))
		assertOneLine(t, Reject(cmd.Component, cmd.Agent, line))
		assertOneLine(t, Review(cmd.Component, cmd.Agent, cmd.PR))
		assertOneLine(t, Fix(cmd.Component, cmd.Agent, cmd.Percent, 3, cmd.Text))
		assertOneLine(t, Escalate(cmd.Component, NeedInfo, line, line))
		assertOneLine(t, StatusLine(cmd.Component, "building", []Field{{"note", line}}))
		assertOneLine(t, Tasks(append([]string{cmd.Component}, cmd.Deps...)))
	})
}

func assertOneLine(t *testing.T, r Reply) {
	t.Helper()
	reply := r.Text
	if strings.ContainsAny(reply, "\r\n\u2028\u2029\u0085") {
		t.Fatalf("reply breaks the line: %q", reply)
	}
	if len(reply) > 4*MaxText {
		t.Fatalf("reply is %d bytes: %q", len(reply), reply)
	}
}
