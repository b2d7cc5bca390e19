package guide

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/protocol"
)

const contractFile = "../../docs/protocol.md"

func TestDocsCopyIsIdentical(t *testing.T) {
	doc, err := os.ReadFile("../../docs/AGENTS.md")
	require.NoError(t, err)
	assert.True(t, string(doc) == Text, "docs/AGENTS.md differs from internal/guide/AGENTS.md: edit the latter, then go generate ./internal/guide")
}

// exampleLine is one line of a chat example: who says it, and what.
type exampleLine struct{ who, text string }

var chatBlock = regexp.MustCompile("(?s)```chat\n(.*?)```")

func examples(t *testing.T) []exampleLine {
	var out []exampleLine
	for _, m := range chatBlock.FindAllStringSubmatch(Text, -1) {
		for _, l := range strings.Split(strings.TrimSpace(m[1]), "\n") {
			who, text, ok := strings.Cut(l, ": ")
			require.True(t, ok, "an example line is who: line, not %q", l)
			out = append(out, exampleLine{who, text})
		}
	}
	require.NotEmpty(t, out)
	return out
}

func TestEveryExampleIsAProtocolLine(t *testing.T) {
	forms, codes := contract(t)
	for _, ex := range examples(t) {
		if ex.who == "foreman" {
			assert.NoError(t, checkReply(ex.text, forms, codes), "foreman: %s", ex.text)
			continue
		}
		cmd, err := protocol.Read(ex.text)
		if strings.HasSuffix(ex.who, " (chat)") {
			// Chat is never a protocol line; the host's chat is a handoff.
			assert.NoError(t, err, "%s: %s", ex.who, ex.text)
			assert.Equal(t, protocol.NoVerb, cmd.Verb, "%s: %s is meant to be chat", ex.who, ex.text)
			if strings.HasPrefix(ex.who, "host") {
				_, ok := protocol.ReadHandoff(ex.text)
				assert.True(t, ok, "%s: %s is not a handoff line", ex.who, ex.text)
			}
			continue
		}
		if strings.HasSuffix(ex.who, " (malformed)") {
			assert.Error(t, err, "%s: %s is meant to be malformed", ex.who, ex.text)
			continue
		}
		assert.NoError(t, err, "%s: %s", ex.who, ex.text)
		assert.NotEqual(t, protocol.NoVerb, cmd.Verb, "%s: %s is chat, not a protocol line", ex.who, ex.text)
	}
}

var inlineCode = regexp.MustCompile("`([^`\n]+)`")

// TestEveryInlineExampleIsAProtocolLine checks the lines quoted in prose
// that are examples rather than usage (no <placeholders>, [options],
// alternatives or elisions).
func TestEveryInlineExampleIsAProtocolLine(t *testing.T) {
	forms, codes := contract(t)
	checked := 0
	for _, m := range inlineCode.FindAllStringSubmatch(Text, -1) {
		s := m[1]
		f := strings.Fields(s)
		if strings.ContainsAny(s, "<[|") || strings.Contains(s, "...") || len(f) < 2 || f[0] != strings.ToUpper(f[0]) {
			continue // usage, a bare verb, or prose
		}
		cmd, err := protocol.Read(s)
		switch {
		case err != nil:
			t.Errorf("`%s`: %v", s, err)
		case cmd.Verb != protocol.NoVerb:
			checked++
		case forms[f[0]] != nil:
			assert.NoError(t, checkReply(s, forms, codes), "`%s`", s)
			checked++
		}
	}
	assert.Positive(t, checked)
}

func TestCheckReply(t *testing.T) {
	forms, codes := contract(t)
	for _, good := range []string{"TASKS a b", "ACK api @b1", "ACK api @b1 after TIMEOUT of @b2: progress 40%", "FIX api @b1 1/3 no tests",
		"ESCALATE build overtime 2h passed", "OK RESOLVE api", "STATUS api pending", "MERGED api", "COMPLETE shop"} {
		assert.NoError(t, checkReply(good, forms, codes), good)
	}
	for _, bad := range []string{"TASKS", "ACK api b1", "FIX api @b1 one no tests", "ESCALATE api grumpy text", "OK FROBNICATE api",
		"MERGED api now", "HELLO there", "WAIT api @b1"} {
		assert.Error(t, checkReply(bad, forms, codes), bad)
	}
}

func TestDocsLinkOnlyInsideTheRepository(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	files = append(files, filepath.Join(root, "README.md"))
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		assert.NotContains(t, string(b), "../shared", f)
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path := filepath.Join(filepath.Dir(f), target)
			rel, err := filepath.Rel(root, path)
			require.NoError(t, err)
			assert.False(t, strings.HasPrefix(rel, ".."), "%s links outside the repository: %s", f, m[1])
			_, err = os.Stat(path)
			assert.NoError(t, err, "%s links to a missing file: %s", f, m[1])
		}
	}
}
