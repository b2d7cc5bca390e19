package live

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/host"
)

// host.land_as squash: each component lands as one commit on main, its
// only parent the commit before, its tree the one that passed, its message
// naming the component, its builder and who approved it; the builders'
// several commits each stay off main's history, kept under
// refs/foreman/squashed/ (their branches pruned), where foreman verify
// (run as every world ends) makes each squash again to compare.
func TestSquashLandsOneCommitPerComponent(t *testing.T) {
	w := newWorld(t, worldOptions{components: []string{"db", "api"}, extra: "  land_as: squash\n"})
	w.startHostWith(nil, func(o *Options) { o.Core.Prune = true })
	tips := map[string]string{}
	for _, b := range []struct{ builder, c string }{{"b1", "db"}, {"b2", "api"}} {
		w.claim(b.builder, b.c)
		branch := b.builder + "/" + b.c
		w.commit(branch, "main", map[string]string{b.c + ".txt": "first\n"})
		tips[b.c] = w.commit(branch, branch, map[string]string{b.c + ".txt": "second\n", b.c + "_test.txt": "ok\n"})
	}
	for _, b := range []struct{ builder, c string }{{"b1", "db"}, {"b2", "api"}} {
		w.say(b.builder, "READY "+b.c+" "+b.builder+"/"+b.c)
		w.expect(w.host, "CI "+b.c+" PASS ")
		w.say("aud", "AUDIT "+b.c+" PASS")
		w.expect(w.host, "MERGED "+b.c)
	}

	lines := strings.Split(strings.TrimSpace(w.git("log", "--first-parent", "--format=%H %P|%s", "main")), "\n")
	require.Len(t, lines, 3, "one commit per component, and the root:\n%s", w.git("log", "--graph", "--oneline", "--all"))
	for i, c := range []string{"api", "db"} {
		head, subject, _ := strings.Cut(lines[i], "|")
		ids := strings.Fields(head)
		assert.Len(t, ids, 2, "one parent: %s", lines[i])
		assert.Equal(t, "Squash "+map[string]string{"db": "b1", "api": "b2"}[c]+"/"+c+" ("+c+") into main", subject)
		body := w.git("log", "-1", "--format=%B", ids[0])
		assert.Contains(t, body, "approved by "+w.id("aud"))
		kept, err := w.repo.RevParse(bg, host.SquashedRef(ids[0]))
		require.NoError(t, err)
		assert.Equal(t, tips[c], kept, "the approved commit is kept, off main")
		in, err := w.repo.IsAncestor(bg, tips[c], "refs/heads/main")
		require.NoError(t, err)
		assert.False(t, in, "no builder's commit on main's history")
	}
	gone, err := w.repo.RevParse(bg, "refs/heads/b1/db")
	require.NoError(t, err)
	assert.Empty(t, gone, "pruned")
	w.everyLandedTreePassed()
}
