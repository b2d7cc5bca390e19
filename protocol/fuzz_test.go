package protocol

import (
	"errors"
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
		"OVERLAP api web src/a.go go.mod", "OVERLAP api api x", "PROGRESS api 40 branch=b1/api note",
		"PROGRESS api 40 branch=-x", "PROGRESS api 40 Branch=a\x01b c", "PROGRESS api 4 \x01branch=b x",
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
			var pe *ParseError
			if errors.As(err, &pe) && pe.CheckIn() {
				// The line stands without its branch: a PROGRESS of a
				// valid component that names none.
				if cmd.Verb != Progress || !ValidComponent(cmd.Component) || cmd.Branch != "" || cmd.Percent < 0 || cmd.Percent > 100 {
					t.Fatalf("%q: a check-in kept after a bad branch reads as %+v", line, cmd)
				}
			} else if cmd.Component != "" {
				t.Fatalf("%q: a malformed line kept its arguments: %+v", line, cmd)
			}
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
		if cmd.Branch != "" {
			if _, err := CheckRef(cmd.Branch); err != nil {
				t.Fatalf("%q: kept branch %q, which CheckRef refuses: %v", line, cmd.Branch, err)
			}
			assertOneLine(t, Ack(cmd.Component, "@b", BranchKey+cmd.Branch))
			if got, ok := HandedBranch(BranchKey + cmd.Branch + " after TIMEOUT of @a: " + line); !ok || got != cmd.Branch {
				t.Fatalf("%q: an ACK handing over %q reads as %q", line, cmd.Branch, got)
			}
		}
		if cmd.Verb == Overlap {
			files := strings.Fields(cmd.Text)
			said := OverlapLine(cmd.Component, cmd.Other, files)
			again, err := bot.Read(said)
			if err != nil || again.Verb != Overlap || again.Component != cmd.Component || again.Other != cmd.Other {
				t.Fatalf("%q: the host's line %q reads as %+v, %v", line, said, again, err)
			}
		}
	})
}

// FuzzHandoff reads arbitrary lines as a host's handoff line. It must
// never panic; a line read as one writes back to a line that reads the
// same, on one line.
func FuzzHandoff(f *testing.F) {
	c := strings.Repeat("ab", 20)
	for _, seed := range []string{
		"@b2 api: refs/foreman/handoff/api/1 (" + c + ") keeps the work @b1 pushed to b1/api before it left; start from it",
		"@b2 web/ui: refs/foreman/handoff/web/ui/12 (" + c + ")",
		"@b2 api: refs/foreman/handoff/api/0 (" + c + ")", "@b2 api: refs/foreman/handoff/web/1 (" + c + ")",
		"@b2 a..b: refs/foreman/handoff/a..b/1 (" + c + ")", "> @b2 api: x", "hello",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		h, ok := ReadHandoff(line)
		if !ok {
			return
		}
		said, ok := HandoffLine(h)
		if !ok {
			t.Fatalf("%q read as %+v, which does not write back", line, h)
		}
		assertOneLine(t, Reply{Text: said})
		again, ok := ReadHandoff(said)
		if !ok || !reflect.DeepEqual(h, again) {
			t.Fatalf("%q read as %+v writes %q, which reads as %+v", line, h, said, again)
		}
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
