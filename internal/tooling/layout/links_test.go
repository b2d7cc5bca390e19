package layout

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// root is the repository's top directory.
const root = "../../.."

var (
	// linkRE is a Markdown link or image: [text](target) or ![alt](target).
	linkRE    = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	headingRE = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *#*$`)
	fenceRE   = regexp.MustCompile("(?ms)^```.*?^```")
	// anchorDrop is what GitHub drops from a heading to make its anchor:
	// all but letters, digits, spaces, hyphens and underscores.
	anchorDrop = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// anchors are the #fragments a Markdown file's headings give, as GitHub
// makes them: lower case, punctuation dropped, spaces as hyphens, a
// repeated one numbered (-1, -2...).
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range headingRE.FindAllStringSubmatch(fenceRE.ReplaceAllString(text, ""), -1) {
		h := strings.ToLower(strings.ReplaceAll(m[1], "`", ""))
		a := strings.ReplaceAll(anchorDrop.ReplaceAllString(h, ""), " ", "-")
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// brokenLinks lists every relative link of the Markdown file at path (in
// the tree at base) whose file, or whose #anchor in it, is not there.
func brokenLinks(t *testing.T, base, path string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(base, path))
	require.NoError(t, err)
	text := string(data)
	var out []string
	for _, m := range linkRE.FindAllStringSubmatch(fenceRE.ReplaceAllString(text, ""), -1) {
		target := m[1]
		if regexp.MustCompile(`^[a-z][a-z+.-]*:`).MatchString(target) {
			continue // http:, https:, mailto:
		}
		file, frag, _ := strings.Cut(target, "#")
		var body string
		if file == "" {
			body = text
		} else {
			p := filepath.Join(base, filepath.Dir(path), file)
			st, err := os.Stat(p)
			if err != nil {
				out = append(out, fmt.Sprintf("%s: %s: no such file", path, target))
				continue
			}
			if frag == "" || st.IsDir() {
				continue
			}
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			body = string(b)
		}
		if frag != "" && (file == "" || strings.HasSuffix(file, ".md")) {
			if !anchors(body)[frag] {
				out = append(out, fmt.Sprintf("%s: %s: no heading gives #%s", path, target, frag))
			}
		}
	}
	return out
}

// Every relative link of the README and of docs/*.md leads somewhere: the
// file is there, and so is the heading its #anchor names.
func TestEveryLinkResolves(t *testing.T) {
	files := []string{"README.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, docs)
	for _, d := range docs {
		files = append(files, filepath.Join("docs", filepath.Base(d)))
	}
	for _, f := range files {
		assert.Empty(t, brokenLinks(t, root, f), f)
	}
}

// The README stays a front page: what foreman is, the quickest path, the
// main commands, and where the rest is.
func TestTheReadmeIsShort(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	lines := strings.Count(string(data), "\n")
	assert.LessOrEqual(t, lines, 300, "README.md has %d lines: move what is not the quickest path into docs/", lines)
	for _, h := range []string{"## First commands", "## The main commands", "## Where the rest is"} {
		assert.Contains(t, string(data), "\n"+h+"\n")
	}
}

// The checker sees what it is for: a link to a file that is not there, a
// heading that is not there, and none of the good ones.
func TestTheLinkCheckerCatchesBrokenLinks(t *testing.T) {
	base := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(base, "docs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(base, "docs", "HOST.md"), []byte("# Host\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(base, "README.md"), []byte("# foreman\n\n## Where the rest is\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(base, "docs", "links.md"), []byte("# A `title`, here\n\n## Twice\n\n## Twice\n\n"+
		"[ok](#a-title-here) [ok](#twice-1) [ok](HOST.md) [ok](../README.md#where-the-rest-is) [ok](https://example.com/x#y)\n"+
		"[bad](NOPE.md) [bad](#nope) [bad](../README.md#nope)\n```\n[in a block](NOPE2.md)\n```\n"), 0o644))
	got := brokenLinks(t, base, filepath.Join("docs", "links.md"))
	assert.Len(t, got, 3, "%v", got)
	for _, want := range []string{"NOPE.md: no such file", "#nope: no heading gives #nope", "README.md#nope: no heading"} {
		assert.Contains(t, strings.Join(got, "\n"), want)
	}
}
