package protocol

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var tip = "0123456789abcdef0123456789abcdef01234567"

func TestHandoffLineReadsBack(t *testing.T) {
	h := Handoff{To: "@b2", Component: "api", N: 1, Commit: tip, From: "@b1", Branch: "b1/api"}
	line, ok := HandoffLine(h)
	require.True(t, ok)
	assert.Equal(t, "@b2 api: refs/foreman/handoff/api/1 ("+tip+") keeps the work @b1 pushed to b1/api before it left; "+
		"start from it: fetch refs/foreman/handoff/api/1 from the host's repository and branch from "+tip, line)
	got, ok := ReadHandoff(line)
	require.True(t, ok)
	h.Ref = "refs/foreman/handoff/api/1"
	assert.Equal(t, h, got)

	// Who left it and where are extras: the line stands without them.
	line, ok = HandoffLine(Handoff{To: "@b2", Component: "web/ui", N: 12, Commit: tip})
	require.True(t, ok)
	assert.Contains(t, line, "refs/foreman/handoff/web/ui/12 ("+tip+") keeps the work the last builder pushed before it left")
	got, ok = ReadHandoff(line)
	require.True(t, ok)
	assert.Equal(t, Handoff{To: "@b2", Component: "web/ui", N: 12, Ref: "refs/foreman/handoff/web/ui/12", Commit: tip}, got)

	// The shortest form the contract shows is read too.
	got, ok = ReadHandoff("@b2 api: refs/foreman/handoff/api/3 (" + tip + ") is yours")
	require.True(t, ok)
	assert.Equal(t, 3, got.N)
}

func TestHandoffLineRefusesWhatCannotBeSaid(t *testing.T) {
	for _, h := range []Handoff{
		{To: "b2", Component: "api", N: 1, Commit: tip},
		{To: "@b2", Component: "api", N: 0, Commit: tip},
		{To: "@b2", Component: "api", N: 1, Commit: "abc"},
		{To: "@b2", Component: "api", N: 1, Commit: strings.ToUpper(tip)},
		{To: "@b2", Component: "a..b", N: 1, Commit: tip},
		{To: "@b2", Component: "x.lock", N: 1, Commit: tip},
		{To: "@b2", Component: "build", N: 1, Commit: tip},
		{To: "@b2", Component: "api", N: 1, Commit: tip, Ref: "refs/foreman/handoff/api/2"},
	} {
		_, ok := HandoffLine(h)
		assert.False(t, ok, "%+v", h)
	}
	// A branch that is not a ref is left out, never echoed.
	line, ok := HandoffLine(Handoff{To: "@b2", Component: "api", N: 1, Commit: tip, Branch: "-x; rm -rf"})
	require.True(t, ok)
	assert.NotContains(t, line, "rm")
}

func TestReadHandoffRefusesOtherLines(t *testing.T) {
	for _, line := range []string{
		"",
		"hello @b2",
		"> @b2 api: refs/foreman/handoff/api/1 (" + tip + ")",
		"@b2 api refs/foreman/handoff/api/1 (" + tip + ")",
		"@b2 api: refs/foreman/handoff/web/1 (" + tip + ")",
		"@b2 api: refs/foreman/handoff/api/0 (" + tip + ")",
		"@b2 api: refs/foreman/handoff/api/01 (" + tip + ")",
		"@b2 api: refs/foreman/handoff/api/x (" + tip + ")",
		"@b2 api: refs/foreman/handoff/api/1 " + tip,
		"@b2 api: refs/foreman/handoff/api/1 (" + tip[:39] + ")",
		"@b2 api: refs/heads/api/1 (" + tip + ")",
		"b2 api: refs/foreman/handoff/api/1 (" + tip + ")",
		"@b2 a..b: refs/foreman/handoff/a..b/1 (" + tip + ")",
	} {
		_, ok := ReadHandoff(line)
		assert.False(t, ok, line)
	}
}

func TestHandoffRef(t *testing.T) {
	ref, ok := HandoffRef("api", 2)
	assert.True(t, ok)
	assert.Equal(t, "refs/foreman/handoff/api/2", ref)
	for _, c := range []string{"a..b", "x.lock", "a/", "a//b", "a/.b", "bad name", "build"} {
		_, ok := HandoffRef(c, 1)
		assert.False(t, ok, c)
	}
	_, ok = HandoffRef("api", 0)
	assert.False(t, ok)
}

func TestHandedBranch(t *testing.T) {
	for context, want := range map[string]string{
		"branch=b1/api after TIMEOUT of @b1: progress 40%": "b1/api",
		"branch=" + tip + " after RELEASE of @b1":          tip,
		"after TIMEOUT of @b1: progress 40%":               "",
		"after ABORT by @b1 (branch=evil): progress 10%":   "",
		"branch=-x after TIMEOUT of @b1":                   "",
		"":                                                 "",
		"after RETRY of @b1 (3/3 audits failed): last audit: branch=evil": "",
	} {
		got, ok := HandedBranch(context)
		assert.Equal(t, want, got, context)
		assert.Equal(t, want != "", ok, context)
	}
}

func TestOverlapLine(t *testing.T) {
	line := OverlapLine("api", "web", []string{"src/routes.go", "go.mod"})
	assert.Equal(t, "OVERLAP api web src/routes.go go.mod", line)
	cmd, err := Read(line)
	require.NoError(t, err)
	assert.Equal(t, Command{Verb: Overlap, Component: "api", Other: "web", Text: "src/routes.go go.mod"}, cmd)

	// A path with a space or a line break stays one word on one line.
	line = OverlapLine("api", "web", []string{"a b.go", "c\nOVERLAP x y z"})
	assert.Equal(t, "OVERLAP api web a_b.go c_OVERLAP_x_y_z", line)

	// Thousands of files make one bounded line that says how many are left out.
	var many []string
	for i := range 5000 {
		many = append(many, strings.Repeat("d/", 10)+"f"+strings.Repeat("x", i%7)+".go")
	}
	line = OverlapLine("api", "web", many)
	assert.LessOrEqual(t, len(line), len("OVERLAP api web")+MaxText)
	assert.Regexp(t, `\(\+\d+ more\)$`, line)
	cmd, err = Read(line)
	require.NoError(t, err)
	assert.Equal(t, Overlap, cmd.Verb)
}

func TestCheckRef(t *testing.T) {
	for _, ok := range []string{"b1/api", "refs/heads/b1/api", "v1.2+fix_3", tip} {
		_, err := CheckRef(ok)
		assert.NoError(t, err, ok)
	}
	for bad, why := range map[string]string{
		"a/.b": "starting with a dot", "x.lock": ".lock", "a//b": "empty part", "a/": "empty part",
		"a.": "ends with a dot", ".a": "starting with a dot", "/a": "empty part",
		"-x": "starts with -", "--upload-pack=x": "starts with -", "a..b": "..", "a b": "space",
	} {
		_, err := CheckRef(bad)
		var re *RefError
		require.ErrorAs(t, err, &re, bad)
		assert.Contains(t, re.Why, why, bad)
	}
	assert.Equal(t, "b1/api", Ref{Branch: "refs/heads/b1/api"}.String())
}

func TestReadHandover(t *testing.T) {
	for context, want := range map[string]Handover{
		"branch=b1/api after TIMEOUT of @b1: progress 40%":                           {Branch: "b1/api", Why: "TIMEOUT", From: "@b1"},
		"after ABORT by @b1 (context_exhaustion_handoff at 60%): progress 60%":       {Why: "ABORT", From: "@b1"},
		"branch=pr/1 after RETRY of @b1 (2/2 audits failed): PR pr/1, last audit: x": {Branch: "pr/1", Why: "RETRY", From: "@b1"},
		"after RELEASE of @b1: no progress reported":                                 {Why: "RELEASE", From: "@b1"},
		"branch=b7/docs after ASSIGN of @b7: progress 10%":                           {Branch: "b7/docs", Why: "ASSIGN", From: "@b7"},
	} {
		got, ok := ReadHandover(context)
		assert.True(t, ok, context)
		assert.Equal(t, want, got, context)
	}
	for _, context := range []string{"", "resolved by @op: spec fixed", "branch=b1/api", "after LUNCH of @b1", "after TIMEOUT of b1"} {
		_, ok := ReadHandover(context)
		assert.False(t, ok, context)
	}
}
