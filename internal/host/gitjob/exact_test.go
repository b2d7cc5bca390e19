package gitjob

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/host"
)

// The land job is the last line of defence, and holds alone: whatever
// job it is handed, the target moves only to commits that are each
// exactly an approved landing (first parent where it lands, merging the
// approved commit, or squashing it, its tree that merge's), one landing
// as a batch. No path of the core hands it such a job: each row is the
// job a broken or subverted core could, and each lands when the check is
// skipped (trustLandings), so each is what the check stops.
func TestTheLandJobLandsOnlyTheApprovedLanding(t *testing.T) {
	for _, tc := range []struct {
		name string
		// job makes the Land job from main (the target), the approved
		// commit and another commit nobody approved.
		job  func(f *fixture, main, approved, other string) host.Job
		want string
	}{
		{"an unapproved commit between the target and the landing", func(f *fixture, main, approved, other string) host.Job {
			// other is on main's line: the landing is made on it.
			merge := f.merge(other, approved, false)
			return f.landJob(main, approved, merge, false)
		}, "is not made on"},
		{"a merge of an unapproved commit instead of the approved one", func(f *fixture, main, approved, other string) host.Job {
			return f.landJob(main, approved, f.merge(main, other, false), false)
		}, "does not merge the approved commit"},
		{"a merge of the approved commit and another", func(f *fixture, main, approved, other string) host.Job {
			tree := f.mergeTree(main, approved)
			octopus, err := f.repo.CommitMerge(ctx, tree, "octopus", main, approved, other)
			require.NoError(f.t, err)
			return f.landJob(main, approved, octopus, false)
		}, "does not merge the approved commit"},
		{"a merge whose tree holds more than the merge", func(f *fixture, main, approved, other string) host.Job {
			tree := f.mergeTree(main, other)
			extra, err := f.repo.CommitMerge(ctx, tree, "Merge", main, approved)
			require.NoError(f.t, err)
			return f.landJob(main, approved, extra, false)
		}, "which is not the merge of"},
		{"a squash that keeps a second parent", func(f *fixture, main, approved, other string) host.Job {
			return f.landJob(main, approved, f.merge(main, approved, false), true)
		}, "is to squash"},
		{"a squash of another commit", func(f *fixture, main, approved, other string) host.Job {
			return f.landJob(main, approved, f.merge(main, other, true), true)
		}, "which is not the merge of"},
		{"a batch whose first landing merges an unapproved commit", func(f *fixture, main, approved, other string) host.Job {
			first := f.merge(main, other, false)
			j := f.landJob(first, approved, f.merge(first, approved, false), false)
			below := f.landJob(main, approved, first, false)
			below.Component = "db"
			j.Batch = []host.Job{below}
			return j
		}, "db's commit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, trusting := range []bool{true, false} {
				f := newFixture(t, true, func(o *Options) { o.trustLandings = trusting })
				f.commit("b1/api", "main", map[string]string{"api": "api"}, "approved")
				f.commit("evil", "main", map[string]string{"BUG": "BUG"}, "nobody approved this")
				main, approved, other := f.tip("main"), f.tip("b1/api"), f.tip("evil")
				if tc.name == "an unapproved commit between the target and the landing" {
					// other sits on main's line below the landing: the job
					// moves main from main, past other.
					other = f.commit("", main, map[string]string{"BUG": "BUG"}, "nobody approved this")
				}
				j := tc.job(f, main, approved, other)
				o := f.runner.Run(ctx, j)
				if trusting {
					require.Equal(t, host.Landed, o.Result, "without the check the attack lands: %+v", o)
					continue
				}
				assert.Equal(t, host.Refused, o.Result, "%+v", o)
				assert.Contains(t, o.Line, tc.want)
				assert.Equal(t, main, f.tip("main"), "nothing moved")
			}
		})
	}
}

// merge makes the commit a landing of theirs on ours would be: a merge
// commit, or a squash (one parent), holding the merge's tree.
func (f *fixture) merge(ours, theirs string, squash bool) string {
	f.t.Helper()
	tree := f.mergeTree(ours, theirs)
	var id string
	var err error
	if squash {
		id, err = f.repo.CommitSquash(ctx, tree, "Squash", ours, theirs)
	} else {
		id, err = f.repo.CommitMerge(ctx, tree, "Merge", ours, theirs)
	}
	require.NoError(f.t, err)
	return id
}

func (f *fixture) mergeTree(ours, theirs string) string {
	f.t.Helper()
	m, err := f.repo.MergeTree(ctx, ours, theirs)
	require.NoError(f.t, err)
	require.True(f.t, m.Clean())
	return m.Tree
}

// landJob is a Land job of api's approved commit, from base to commit,
// whose own tree is the one that passed.
func (f *fixture) landJob(base, approved, commit string, squash bool) host.Job {
	f.t.Helper()
	j := f.job(host.Land, "api", "b1/api", nil)
	made, err := f.repo.CommitOf(ctx, commit)
	require.NoError(f.t, err)
	j.Base, j.Tip, j.Commit, j.Tree, j.Squash = base, approved, commit, made.Tree, squash
	return j
}

// Before the compare-and-swap every landing of a batch has its branch
// checked, not only the head's: a branch below the head that moved after
// its approval holds the whole batch back, and is named.
func TestEveryBranchOfABatchIsCheckedBeforeItLands(t *testing.T) {
	f := newFixture(t, true, nil)
	f.commit("b1/api", "main", map[string]string{"api": "api"}, "api")
	f.commit("b2/db", "main", map[string]string{"db": "db"}, "db")
	main, api, db := f.tip("main"), f.tip("b1/api"), f.tip("b2/db")
	first := f.merge(main, api, false)
	below := f.landJob(main, api, first, false)
	j := f.landJob(first, db, f.merge(first, db, false), false)
	j.Component, j.Ref = "db", "b2/db"
	j.Batch = []host.Job{below}
	f.commit("b1/api", "b1/api", map[string]string{"api": "more"}, "pushed after approval")
	o := f.runner.Run(ctx, j)
	assert.Equal(t, host.Stale, o.Result, "%+v", o)
	assert.Equal(t, "api", o.Culprit)
	assert.Equal(t, f.tip("b1/api"), o.Found)
	assert.Equal(t, main, f.tip("main"))
}

// A squash keeps the approved commit where verify finds it
// (host.SquashedRef) before the target moves: its branch pruned and the
// repository collected, verify still makes the squash again.
func TestASquashKeepsTheApprovedCommitForVerify(t *testing.T) {
	f := newFixture(t, true, nil)
	f.commit("b/a", "main", map[string]string{"a": "a"}, "a")
	start := f.tip("main")
	s := newShell(t, f, func(c *host.Config) { c.Gating, c.Squash, c.Prune, c.Components = false, true, true, []string{"a"} })
	s.hear("@foreman", "ACK a @ba")
	s.approve("a")
	s.drain()
	require.Contains(t, s.said, "MERGED a")
	assert.Empty(t, f.tipOrEmpty("b/a"), "pruned")
	f.git("reflog", "expire", "--expire=now", "--all")
	f.git("gc", "--prune=now", "--quiet")
	s.verified(start, 1)
}
