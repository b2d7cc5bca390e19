package protocol

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var bot = Reader{Mentions: []string{"@foreman", "@0123456789abcdef"}}

func TestReadGoodLines(t *testing.T) {
	cases := []struct {
		line string
		want Command
	}{
		{"CLAIM api", Command{Verb: Claim, Component: "api"}},
		{"claim api", Command{Verb: Claim, Component: "api"}},
		{"Claim web/ui-2.v1", Command{Verb: Claim, Component: "web/ui-2.v1"}},
		{"CLAIM snake_case", Command{Verb: Claim, Component: "snake_case"}},
		{"PROGRESS api 50", Command{Verb: Progress, Component: "api", Percent: 50}},
		{"PROGRESS api 50%", Command{Verb: Progress, Component: "api", Percent: 50}},
		{"PROGRESS api 0", Command{Verb: Progress, Component: "api", Percent: 0}},
		{"PROGRESS api 100% tests green", Command{Verb: Progress, Component: "api", Percent: 100, Text: "tests green"}},
		{"PROGRESS api 007", Command{Verb: Progress, Component: "api", Percent: 7}},
		{"PROGRESS api 40 branch=b1/api", Command{Verb: Progress, Component: "api", Percent: 40, Branch: "b1/api"}},
		{"PROGRESS api 40% Branch=refs/heads/b1/api schema drafted", Command{Verb: Progress, Component: "api", Percent: 40, Branch: "refs/heads/b1/api", Text: "schema drafted"}},
		{"PROGRESS api 40 branch=" + strings.Repeat("ab", 20), Command{Verb: Progress, Component: "api", Percent: 40, Branch: strings.Repeat("ab", 20)}},
		{"PROGRESS api 40 on branch=b1/api", Command{Verb: Progress, Component: "api", Percent: 40, Text: "on branch=b1/api"}},
		{"BLOCKED api db", Command{Verb: Blocked, Component: "api", Dep: "db"}},
		{"BLOCKED api db need the schema", Command{Verb: Blocked, Component: "api", Dep: "db", Text: "need the schema"}},
		{"CONFLICT api web files src/shared.go", Command{Verb: Conflict, Component: "api", Other: "web", Kind: Files, Text: "src/shared.go"}},
		{"CONFLICT api web INTERFACE", Command{Verb: Conflict, Component: "api", Other: "web", Kind: Interface}},
		{"READY api https://git.example/pr/7", Command{Verb: Ready, Component: "api", PR: "https://git.example/pr/7"}},
		{"READY api build/api", Command{Verb: Ready, Component: "api", PR: "build/api"}},
		{"ABORT api context_exhaustion_handoff at 60%", Command{Verb: Abort, Component: "api", Text: "context_exhaustion_handoff at 60%"}},
		{"AUDIT api PASS", Command{Verb: Audit, Component: "api", Verdict: Pass}},
		{"AUDIT api fail no tests for /users", Command{Verb: Audit, Component: "api", Verdict: Fail, Text: "no tests for /users"}},
		{"CI api PASS", Command{Verb: CI, Component: "api", Verdict: Pass}},
		{"CI api CONFLICT go.sum", Command{Verb: CI, Component: "api", Verdict: MergeConflict, Text: "go.sum"}},
		{"OVERLAP api web src/routes.go go.mod", Command{Verb: Overlap, Component: "api", Other: "web", Text: "src/routes.go go.mod"}},
		{"STATUS", Command{Verb: Status}},
		{"STATUS api", Command{Verb: Status, Component: "api"}},
		{"ASSIGN api @b2", Command{Verb: Assign, Component: "api", Agent: "@b2"}},
		{"RELEASE api", Command{Verb: Release, Component: "api"}},
		{"RESOLVE api", Command{Verb: Resolve, Component: "api"}},
		{"RESOLVE api spec fixed", Command{Verb: Resolve, Component: "api", Text: "spec fixed"}},
		{"OVERRIDE api", Command{Verb: Override, Component: "api"}},
		{"MERGED api", Command{Verb: Merged, Component: "api"}},
		{"DEPEND api db", Command{Verb: Depend, Component: "api", Dep: "db"}},
		{"UNDEPEND api db", Command{Verb: Undepend, Component: "api", Dep: "db"}},
		{"ADD cache", Command{Verb: Add, Component: "cache"}},
		{"ADD cache db auth", Command{Verb: Add, Component: "cache", Deps: []string{"db", "auth"}}},
		{"PAUSE", Command{Verb: Pause}},
		{"resume", Command{Verb: Resume}},
	}
	for _, tc := range cases {
		t.Run(tc.line, func(t *testing.T) {
			got, err := bot.Read(tc.line)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			again, err := bot.Read(got.String())
			require.NoError(t, err)
			assert.Equal(t, got, again, "canonical form %q reads back differently", got.String())
		})
	}
}

func TestReadDecoration(t *testing.T) {
	claim := Command{Verb: Claim, Component: "api"}
	for _, line := range []string{
		"  CLAIM api  ",
		"**CLAIM api**",
		"__CLAIM__ api",
		"`CLAIM api`",
		"- CLAIM api",
		"* CLAIM api",
		"+ CLAIM api",
		"1. CLAIM api",
		"12) CLAIM api",
		"@foreman CLAIM api",
		"@Foreman: CLAIM api",
		"@foreman, CLAIM api",
		"@0123456789abcdef CLAIM api",
		"- @foreman **CLAIM** `api`",
		"\tCLAIM\tapi",
		"*`*CLAIM api",
	} {
		got, err := bot.Read(line)
		require.NoError(t, err, line)
		assert.Equal(t, claim, got, line)
	}
}

func TestReadChat(t *testing.T) {
	for _, line := range []string{
		"",
		"   ",
		"hello everyone",
		"> CLAIM api",
		">CLAIM api",
		"- > CLAIM api",
		"**> CLAIM api**",
		"@someone CLAIM api",
		"@foreman",
		"CLAIM: api",
		"~~CLAIM api~~",
		"I will CLAIM api",
		"CLAIMS api",
	} {
		got, err := bot.Read(line)
		require.NoError(t, err, line)
		assert.Equal(t, NoVerb, got.Verb, "%q should be chat", line)
	}
}

func TestReadBadLines(t *testing.T) {
	cases := []struct {
		line    string
		verb    Verb
		problem Problem
	}{
		{"CLAIM", Claim, MissingArgument},
		{"CLAIM api web", Claim, ExtraArgument},
		{"CLAIM -api", Claim, BadComponent},
		{"CLAIM ap!", Claim, BadComponent},
		{"CLAIM " + strings.Repeat("a", 65), Claim, ComponentTooLong},
		{"PROGRESS api", Progress, MissingArgument},
		{"PROGRESS api 101", Progress, BadPercent},
		{"PROGRESS api -1", Progress, BadPercent},
		{"PROGRESS api 50.5", Progress, BadPercent},
		{"PROGRESS api %", Progress, BadPercent},
		{"PROGRESS api 99999999999999999999", Progress, BadPercent},
		{"PROGRESS api half", Progress, BadPercent},
		{"BLOCKED api", Blocked, MissingArgument},
		{"BLOCKED api d#b", Blocked, BadComponent},
		{"CONFLICT api web", Conflict, MissingArgument},
		{"CONFLICT api web lines", Conflict, BadConflictKind},
		{"READY api", Ready, MissingArgument},
		{"READY api pr/1 and more", Ready, ExtraArgument},
		{"READY api pr\x00", Ready, Unprintable},
		{"READY api " + strings.Repeat("p", 301), Ready, Unprintable},
		{"ABORT api", Abort, MissingArgument},
		{"AUDIT api", Audit, MissingArgument},
		{"AUDIT api MAYBE", Audit, BadVerdict},
		{"AUDIT api CONFLICT", Audit, BadVerdict},
		{"CI api OK", CI, BadVerdict},
		{"OVERLAP api web", Overlap, MissingArgument},
		{"OVERLAP api", Overlap, MissingArgument},
		{"OVERLAP api w#b x.go", Overlap, BadComponent},
		{"OVERLAP build web x.go", Overlap, ReservedName},
		{"STATUS api web", Status, ExtraArgument},
		{"STATUS a?", Status, BadComponent},
		{"ASSIGN api", Assign, MissingArgument},
		{"ASSIGN api bob", Assign, BadAgent},
		{"ASSIGN api @", Assign, BadAgent},
		{"ASSIGN api @b2 now", Assign, ExtraArgument},
		{"RELEASE", Release, MissingArgument},
		{"RESOLVE", Resolve, MissingArgument},
		{"OVERRIDE api x", Override, ExtraArgument},
		{"MERGED", Merged, MissingArgument},
		{"DEPEND api", Depend, MissingArgument},
		{"UNDEPEND api db x", Undepend, ExtraArgument},
		{"ADD", Add, MissingArgument},
		{"ADD cache d!", Add, BadComponent},
		{"CLAIM build", Claim, ReservedName},
		{"CLAIM Build", Claim, ReservedName},
		{"ADD claim", Add, ReservedName},
		{"ADD cache ack", Add, ReservedName},
		{"BLOCKED api UNBLOCKED", Blocked, ReservedName},
		{"PAUSE now", Pause, ExtraArgument},
		{"RESUME please", Resume, ExtraArgument},
	}
	for _, tc := range cases {
		t.Run(tc.line, func(t *testing.T) {
			got, err := bot.Read(tc.line)
			var pe *ParseError
			require.True(t, errors.As(err, &pe), "want a *ParseError, got %v", err)
			assert.Equal(t, tc.verb, got.Verb)
			assert.Equal(t, tc.verb, pe.Verb)
			assert.Equal(t, tc.problem, pe.Problem)
			assert.Contains(t, pe.Error(), "usage: "+tc.verb.Usage(), "the error teaches the usage")
			assert.NotContains(t, pe.Error(), "\n")
		})
	}
}

// A PROGRESS whose branch= is not a ref gets ERROR and still counts as a
// check-in (contract section 10): Read gives the command without the
// branch, and an error that says so. A ref is checked as the sender wrote
// it: a control character is refused, never cleaned into another name.
func TestReadProgressWithABadBranch(t *testing.T) {
	for line, why := range map[string]string{
		"PROGRESS api 40 branch=-x note":                     "starts with -, which git would read as an option",
		"PROGRESS api 40 branch=--upload-pack=touch":         "starts with -",
		"PROGRESS api 40 branch=main..b1":                    "holds .., a range",
		"PROGRESS api 40 branch=a\x01b":                      "control character",
		"PROGRESS api 40 branch=a\x01b note":                 "control character",
		"PROGRESS api 40 branch=a\u2028b":                    "outside ASCII",
		"PROGRESS api 40 \x01branch=b1/api":                  "control character",
		"PROGRESS api 40 branch=":                            "no branch named",
		"PROGRESS api 40 branch=https://x/pr/1":              `holds ':'`,
		"PROGRESS api 40 branch=refs/tags/v1":                "not a branch",
		"PROGRESS api 40 branch=b1/api.lock":                 "ending in .lock",
		"PROGRESS api 40 branch=b1//api":                     "empty part",
		"PROGRESS api 40 branch=b1/.api":                     "starting with a dot",
		"PROGRESS api 40 branch=" + strings.Repeat("a", 201): "more than 200",
	} {
		got, err := bot.Read(line)
		var pe *ParseError
		require.ErrorAs(t, err, &pe, "%q", line)
		assert.True(t, pe.CheckIn(), line)
		assert.Equal(t, BadRef, pe.Problem, line)
		assert.Contains(t, pe.Error(), why, line)
		assert.Contains(t, pe.Error(), "still counts as a check-in", line)
		assert.Contains(t, pe.Error(), "usage: PROGRESS <c> <pct>[%] [branch=<ref>] [note]", line)
		assert.Equal(t, Progress, got.Verb, line)
		assert.Equal(t, "api", got.Component, line)
		assert.Equal(t, 40, got.Percent, line)
		assert.Empty(t, got.Branch, line)
		assert.NotContains(t, Error("@b1", pe.Error()).Text, "\n")
	}
	// Any other problem loses the whole line, as before.
	got, err := bot.Read("PROGRESS api 400 branch=b1/api")
	var pe *ParseError
	require.ErrorAs(t, err, &pe)
	assert.False(t, pe.CheckIn())
	assert.Equal(t, Command{Verb: Progress}, got)
}

func TestReadCleansFreeText(t *testing.T) {
	got, err := Read("PROGRESS api 10 a\x00b\x1bc\u2028d\u202Ee \xff")
	require.NoError(t, err)
	assert.Equal(t, "a b c d e \ufffd", got.Text)

	long, err := Read("AUDIT api FAIL " + strings.Repeat("x", 5000))
	require.NoError(t, err)
	assert.LessOrEqual(t, len(long.Text), MaxText)
	assert.True(t, strings.HasSuffix(long.Text, "..."))
}

func TestLines(t *testing.T) {
	got := slices.Collect(Lines("a\nb\r\nc\rd\n\ne"))
	assert.Equal(t, []string{"a", "b", "c", "d", "", "e"}, got)
	assert.Empty(t, slices.Collect(Lines("")))
	assert.Equal(t, []string{"a"}, slices.Collect(Lines("a\n")))
}

func TestLookupVerb(t *testing.T) {
	for _, v := range Verbs() {
		got, ok := LookupVerb(strings.ToLower(v.String()))
		assert.True(t, ok)
		assert.Equal(t, v, got)
	}
	_, ok := LookupVerb("ſtatus") // Unicode folding must not make a verb
	assert.False(t, ok)
}

func BenchmarkReadProgress(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_, _ = bot.Read("PROGRESS api 50 halfway there")
	}
}

// A PROGRESS that names its branch is read, and the ref checked, without
// allocating either.
func BenchmarkReadProgressBranch(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_, _ = bot.Read("PROGRESS api 50 branch=b1/api halfway there")
	}
}

// No component may be named like a verb or "build": the bot's lines about
// it could be read as something else (contract section 3).
func TestReservedNames(t *testing.T) {
	for _, v := range Verbs() {
		assert.True(t, Reserved(v.String()), v.String())
		assert.False(t, ValidComponent(strings.ToLower(v.String())), v.String())
	}
	for _, v := range ReplyVerbs() {
		assert.True(t, Reserved(v.String()), v.String())
	}
	assert.True(t, Reserved("build"))
	assert.False(t, Reserved("builder"))
	assert.False(t, Reserved("claims"))
	assert.True(t, ValidComponent("build-tools"))
}
