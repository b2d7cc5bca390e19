package verify

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host/receipt"
)

var ctx = context.Background()

// target is a repository whose main a host lands on, with receipts, as
// foreman host makes them: each landing a merge of an approved commit onto
// main, whose tree passed, noted with its signed receipt.
type target struct {
	t     testing.TB
	repo  *gitrepo.Repo
	key   *agentchat.Identity
	start string // main before the first landing
	n     int

	// chained: receipts of version 2, each naming the repository and the
	// landing before it (last), as foreman host makes them now.
	chained bool
	last    receipt.Link
}

// sign signs l by key, chained to the landing before it when g is, before
// edit changes it (which may break the chain).
func (g *target) sign(l *receipt.Landing, key *agentchat.Identity, edit func(*receipt.Landing)) []byte {
	g.t.Helper()
	if g.chained {
		l.Repository = "shop"
		l.Chain = &receipt.Chain{Seq: g.last.Seq + 1, Previous: g.last.Digest}
		if g.last.Seq == 0 {
			l.Chain.Start = l.LandedOn
		}
	}
	if edit != nil {
		edit(l)
	}
	note, err := receipt.Sign(receipt.New(*l), key)
	require.NoError(g.t, err)
	if l.Chain != nil {
		g.last = receipt.Link{Seq: l.Chain.Seq, Digest: receipt.StatementDigest(note), Commit: l.Commit}
	}
	return note
}

func newTarget(t testing.TB) *target {
	t.Helper()
	repo, err := gitrepo.Init(ctx, filepath.Join(t.TempDir(), "repo.git"), "main", true)
	require.NoError(t, err)
	start, err := repo.RevParse(ctx, "refs/heads/main")
	require.NoError(t, err)
	return &target{t: t, repo: repo, key: agentchat.IdentityFromSeed("host", [32]byte{1}), start: start}
}

func (g *target) main() string {
	g.t.Helper()
	oid, err := g.repo.RevParse(ctx, "refs/heads/main")
	require.NoError(g.t, err)
	return oid
}

// approved is a builder's commit on main, as approved.
func (g *target) approved(c string) string {
	g.t.Helper()
	g.n++
	tip, err := g.repo.CommitFiles(ctx, g.main(), map[string]string{c + ".txt": strconv.Itoa(g.n)}, c+": the work",
		gitrepo.Author{Name: "b1", Email: "b1@example.com"})
	require.NoError(g.t, err)
	return tip
}

// land lands c's approved commit tip on main, signed by key, with a
// receipt that edit may change before it is signed.
func (g *target) land(c, tip string, key *agentchat.Identity, edit func(*receipt.Landing)) string {
	g.t.Helper()
	base := g.main()
	tree, err := g.repo.TreeOf(ctx, tip)
	require.NoError(g.t, err)
	merge, err := g.repo.CommitMerge(ctx, tree, "Merge b1/"+c+" ("+c+") into main\n", base, tip)
	require.NoError(g.t, err)
	l := receipt.Landing{Host: key.AgentID(), Target: "refs/heads/main", Component: c, Builder: "@b1", Ref: "b1/" + c,
		Approved: receipt.Approval{Tip: tip, Auditors: []string{"@aud"}, Round: 1}, LandedOn: base, Commit: merge, Tree: tree,
		Checks: receipt.Checks{Run: g.n, Kind: "check", Commit: merge, Tree: tree, Commands: []receipt.Command{{Command: "make test", Result: "passed"}},
			Tries: []receipt.Log{{Name: c + ".log", Digest: receipt.Digest([]byte("ok"))}}, RanOn: []string{"host"}, Sandbox: "off"},
		At: time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)}
	note := g.sign(&l, key, edit)
	require.NoError(g.t, g.repo.AddNote(ctx, receipt.NotesRef, merge, note))
	require.NoError(g.t, g.repo.UpdateRef(ctx, "refs/heads/main", merge, base, "foreman host: land "+c))
	return merge
}

// byHand pushes a commit straight to main.
func (g *target) byHand(msg string) string {
	g.t.Helper()
	base := g.main()
	oid, err := g.repo.CommitFiles(ctx, base, map[string]string{"hand.txt": msg}, msg, gitrepo.Author{Name: "olga", Email: "olga@example.com"})
	require.NoError(g.t, err)
	require.NoError(g.t, g.repo.UpdateRef(ctx, "refs/heads/main", oid, base, "push"))
	return oid
}

func (g *target) verify(trusted ...*agentchat.Identity) Report {
	g.t.Helper()
	var keys []receipt.Key
	for _, id := range trusted {
		k, err := receipt.KeyOf(id.PublicPEM())
		require.NoError(g.t, err)
		keys = append(keys, k)
	}
	rep, err := Run(ctx, Options{Repo: g.repo, Target: "main", Trusted: keys, Since: g.start, Repository: "shop", Unanchored: true})
	require.NoError(g.t, err)
	return rep
}

func verdicts(r Report) map[string]string {
	m := map[string]string{}
	for _, row := range r.Rows {
		m[row.Commit] = row.Verdict + ": " + row.Why
	}
	return m
}

func TestEveryLandingWithAReceiptThatHolds(t *testing.T) {
	g := newTarget(t)
	a := g.land("a", g.approved("a"), g.key, nil)
	b := g.land("b", g.approved("b"), g.key, nil)
	rep := g.verify(g.key)
	assert.True(t, rep.OK(), rep.Table())
	assert.Equal(t, []string{b, a}, []string{rep.Rows[0].Commit, rep.Rows[1].Commit}, "newest first")
	assert.Equal(t, 2, rep.Landed)
	assert.Equal(t, "a", rep.Rows[1].Component)
	assert.Equal(t, "@aud", rep.Rows[1].Auditors)
	assert.Contains(t, rep.Table(), "main at "+b[:12]+" since "+g.start[:12]+": 2 commits, 2 landed by foreman, 0 not landed by foreman, 0 receipts refused")
}

// What verify must catch, each named with its commit and why.
func TestWhatIsNotAccountedFor(t *testing.T) {
	g := newTarget(t)
	stranger := agentchat.IdentityFromSeed("stranger", [32]byte{9})
	good := g.land("a", g.approved("a"), g.key, nil)
	hand := g.byHand("a fix straight to main")
	untrusted := g.land("b", g.approved("b"), stranger, nil)
	wrongTree := g.land("c", g.approved("c"), g.key, func(l *receipt.Landing) { l.Checks.Tree = strings.Repeat("e", 40) })
	failed := g.land("d", g.approved("d"), g.key, func(l *receipt.Landing) { l.Checks.Commands[0].Result = "failed" })
	notApproved := g.land("e", g.approved("e"), g.key, func(l *receipt.Landing) { l.Approved.Tip = strings.Repeat("a", 40) })
	elsewhere := g.land("f", g.approved("f"), g.key, func(l *receipt.Landing) { l.LandedOn = hand })
	twice := g.approved("g")
	first := g.land("g", twice, g.key, nil)
	again := g.land("g", twice, g.key, nil)

	rep := g.verify(g.key)
	assert.False(t, rep.OK())
	v := verdicts(rep)
	assert.Equal(t, "landed: ", v[good])
	assert.Equal(t, "by-hand: no receipt: not landed by foreman (author olga <olga@example.com>)", v[hand])
	// The table names each commit's subject, and the author as the author:
	// who pushed it, git cannot tell (issue 48).
	table := rep.Table()
	assert.Regexp(t, `(?m)^COMMIT +VERDICT +COMPONENT +SUBJECT +DETAIL$`, table)
	assert.Regexp(t, `(?m)^`+hand[:12]+` +by-hand +- +a fix straight to main +no receipt: not landed by foreman \(author olga <olga@example.com>\)$`, table)
	assert.NotContains(t, table, "pushed by")
	assert.Contains(t, v[untrusted], "refused: its receipt: signed by "+stranger.AgentID()+", which is not a trusted key")
	assert.Contains(t, v[wrongTree], "refused: the checks its receipt names passed on tree eeeeeeeeeeee")
	assert.Equal(t, "refused: not every check its receipt names passed", v[failed])
	assert.Contains(t, v[notApproved], "refused: it does not merge aaaaaaaaaaaa, the commit its receipt says was approved")
	assert.Contains(t, v[elsewhere], "refused: its receipt says it landed on "+hand[:12])
	assert.Equal(t, "landed: ", v[first])
	assert.Contains(t, v[again], "refused: it lands "+twice[:12]+" (g), which "+first[:12]+" landed before: an approval lands once")
	assert.Equal(t, 1, rep.ByHand)
	assert.Equal(t, 6, rep.Bad)
}

// A receipt edited by hand, one deleted, one copied onto another commit.
func TestNotesChangedByHand(t *testing.T) {
	g := newTarget(t)
	a := g.land("a", g.approved("a"), g.key, nil)
	b := g.land("b", g.approved("b"), g.key, nil)
	c := g.land("c", g.approved("c"), g.key, nil)

	// a: its payload changed (the auditor's name), its signature kept.
	note, err := g.repo.Note(ctx, receipt.NotesRef, a)
	require.NoError(t, err)
	var env receipt.Envelope
	require.NoError(t, json.Unmarshal(note, &env))
	body, err := base64.StdEncoding.DecodeString(env.Payload)
	require.NoError(t, err)
	env.Payload = base64.StdEncoding.EncodeToString([]byte(strings.Replace(string(body), `"@aud"`, `"@someone-else"`, 1)))
	edited, err := json.Marshal(env)
	require.NoError(t, err)
	require.NoError(t, g.repo.AddNote(ctx, receipt.NotesRef, a, edited))
	// b: deleted.
	_, err = g.repo.Git(ctx, "notes", "--ref", receipt.NotesRef, "remove", b)
	require.NoError(t, err)
	// c: b's... a's receipt put on c.
	require.NoError(t, g.repo.AddNote(ctx, receipt.NotesRef, c, edited))

	v := verdicts(g.verify(g.key))
	assert.Contains(t, v[a], "refused: its receipt: its signature by "+g.key.AgentID()+" does not verify: the receipt was changed after it was signed")
	assert.Equal(t, "by-hand: no receipt, though its message reads as foreman host's landing: its note was deleted, or never written", v[b])
	assert.Contains(t, v[c], "refused: its receipt: its signature")
	require.NoError(t, g.repo.AddNote(ctx, receipt.NotesRef, c, note))
	assert.Contains(t, verdicts(g.verify(g.key))[c], "refused: its receipt is about "+a[:12]+", not this commit")
}

// The host's key rotated: receipts the old key signed are refused unless
// the old public key is given (--trust), and then they verify.
func TestARotatedKey(t *testing.T) {
	g := newTarget(t)
	old := g.key
	g.land("a", g.approved("a"), old, nil)
	g.key = agentchat.IdentityFromSeed("host", [32]byte{2})
	g.land("b", g.approved("b"), g.key, nil)
	rep := g.verify(g.key)
	assert.Equal(t, 1, rep.Bad, rep.Table())
	rep = g.verify(g.key, old)
	assert.True(t, rep.OK(), rep.Table())
}

// Deleting the receipts of early landings does not move where verify
// starts (--since here; the chain's signed start in chain_test.go), and
// names them.
func TestSinceIsNotTheNotes(t *testing.T) {
	g := newTarget(t)
	a := g.land("a", g.approved("a"), g.key, nil)
	g.land("b", g.approved("b"), g.key, nil)
	_, err := g.repo.Git(ctx, "notes", "--ref", receipt.NotesRef, "remove", a)
	require.NoError(t, err)
	rep := g.verify(g.key)
	assert.Equal(t, 2, len(rep.Rows), "from where the first landing was made")
	assert.Equal(t, 1, rep.ByHand)
}

// verify reads a trusted key from a PEM public key or an identity file,
// and nothing else.
func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	id := agentchat.IdentityFromSeed("host", [32]byte{3})
	require.NoError(t, id.Save(filepath.Join(dir, "host.json")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "host.pub"), []byte(id.PublicPEM()), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "junk"), []byte("hello"), 0o644))
	for _, name := range []string{"host.json", "host.pub"} {
		k, err := receipt.LoadKey(filepath.Join(dir, name))
		require.NoError(t, err, name)
		assert.Equal(t, id.AgentID(), k.ID)
	}
	_, err := receipt.LoadKey(filepath.Join(dir, "junk"))
	assert.ErrorContains(t, err, "neither a PEM public key nor an identity file")
}

// landSquash lands c's approved commit tip on main as host.land_as squash
// does: one commit on main whose tree is the merge of main and tip.
func (g *target) landSquash(c, tip string, edit func(*receipt.Landing)) string {
	g.t.Helper()
	base := g.main()
	m, err := g.repo.MergeTree(ctx, base, tip)
	require.NoError(g.t, err)
	require.True(g.t, m.Clean())
	commit, err := g.repo.CommitSquash(ctx, m.Tree, "Squash b1/"+c+" ("+c+") into main\n", base, tip)
	require.NoError(g.t, err)
	l := receipt.Landing{Host: g.key.AgentID(), Target: "refs/heads/main", Component: c, Builder: "@b1", Ref: "b1/" + c,
		Approved: receipt.Approval{Tip: tip, Auditors: []string{"@aud"}, Round: 1}, LandedOn: base, LandedAs: receipt.LandedAsSquash,
		Commit: commit, Tree: m.Tree,
		Checks: receipt.Checks{Run: g.n, Kind: "car", Commit: commit, Tree: m.Tree, Commands: []receipt.Command{{Command: "make test", Result: "passed"}},
			Tries: []receipt.Log{{Name: c + ".log", Digest: receipt.Digest([]byte("ok"))}}, RanOn: []string{"host"}, Sandbox: "off"},
		At: time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)}
	note := g.sign(&l, g.key, edit)
	require.NoError(g.t, g.repo.AddNote(ctx, receipt.NotesRef, commit, note))
	require.NoError(g.t, g.repo.UpdateRef(ctx, "refs/heads/main", commit, base, "foreman host: land "+c))
	return commit
}

// host.land_as squash: one commit per component, whose tree verify makes
// again from the commit it landed on and the approved commit; a squash
// that is not that merge, a "squash" with two parents, an approved commit
// the repository lacks, and a way of landing nobody knows are refused.
func TestSquashLandings(t *testing.T) {
	g := newTarget(t)
	early := g.approved("a") // made on main as it was: main moves on before it lands
	g.land("z", g.approved("z"), g.key, nil)
	good := g.landSquash("a", early, nil)
	rep := g.verify(g.key)
	require.True(t, rep.OK(), rep.Table())
	assert.Equal(t, receipt.LandedAsSquash, rep.Rows[0].LandedAs)
	assert.Contains(t, rep.Table(), "approved "+early[:12]+" by @aud, squashed;")

	other := g.approved("b")
	wrong := g.landSquash("c", g.approved("c"), func(l *receipt.Landing) { l.Approved.Tip = other })
	asMerge := g.land("d", g.approved("d"), g.key, func(l *receipt.Landing) { l.LandedAs = receipt.LandedAsSquash })
	missing := g.landSquash("e", g.approved("e"), func(l *receipt.Landing) { l.Approved.Tip = strings.Repeat("b", 40) })
	unknown := g.land("f", g.approved("f"), g.key, func(l *receipt.Landing) { l.LandedAs = "rebase" })
	v := verdicts(g.verify(g.key))
	assert.Equal(t, "landed: ", v[good])
	assert.Contains(t, v[wrong], "refused: it is not the squash of "+other[:12])
	assert.Contains(t, v[asMerge], "refused: its receipt says it squashes")
	assert.Contains(t, v[asMerge], "and it has 2 parents")
	assert.Contains(t, v[missing], "refused: it squashes bbbbbbbbbbbb, which is not in this repository")
	assert.Contains(t, v[unknown], `refused: its receipt says it landed as "rebase", neither merge nor squash`)
}

// batch makes the commits a host landing comps in one batch makes: each
// a merge of its approved commit (tips, or new ones when nil) on the one
// before it, the first on main; only the head's tree was checked. Each
// commit is noted with its receipt, which names the batch; edit may
// change the i-th before it is signed. main does not move: moveTo does.
func (g *target) batch(comps, tips []string, edit func(i int, l *receipt.Landing)) []string {
	g.t.Helper()
	if tips == nil {
		for _, c := range comps {
			tips = append(tips, g.approved(c))
		}
	}
	base := g.main()
	var commits, trees []string
	on := base
	for i, c := range comps {
		m, err := g.repo.MergeTree(ctx, on, tips[i])
		require.NoError(g.t, err)
		require.True(g.t, m.Clean())
		commit, err := g.repo.CommitMerge(ctx, m.Tree, "Merge b1/"+c+" ("+c+") into main\n", on, tips[i])
		require.NoError(g.t, err)
		commits, trees, on = append(commits, commit), append(trees, m.Tree), commit
	}
	head, headTree := commits[len(commits)-1], trees[len(trees)-1]
	for i, c := range comps {
		landedOn := base
		if i > 0 {
			landedOn = commits[i-1]
		}
		l := receipt.Landing{Host: g.key.AgentID(), Target: "refs/heads/main", Component: c, Builder: "@b1", Ref: "b1/" + c,
			Approved: receipt.Approval{Tip: tips[i], Auditors: []string{"@aud"}, Round: 1}, LandedOn: landedOn, Commit: commits[i], Tree: trees[i],
			Checks: receipt.Checks{Run: g.n, Kind: "car", Commit: head, Tree: headTree, Commands: []receipt.Command{{Command: "make test", Result: "passed"}},
				Tries: []receipt.Log{{Name: "batch.log", Digest: receipt.Digest([]byte("ok"))}}, RanOn: []string{"host"}, Sandbox: "off"},
			At:    time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC),
			Batch: &receipt.Batch{Head: head, Commits: slices.Clone(commits)}}
		var change func(*receipt.Landing)
		if edit != nil {
			change = func(l *receipt.Landing) { edit(i, l) }
		}
		note := g.sign(&l, g.key, change)
		require.NoError(g.t, g.repo.AddNote(ctx, receipt.NotesRef, commits[i], note))
	}
	return commits
}

// moveTo moves main to commit in one compare-and-swap, as the host lands
// a batch.
func (g *target) moveTo(commit string) {
	g.t.Helper()
	require.NoError(g.t, g.repo.UpdateRef(ctx, "refs/heads/main", commit, g.main(), "foreman host: land a batch"))
}

// A batch of three landed by one move of main, between two landings of
// one: each of its commits is accepted on the checks of the head's tree,
// though the two below it were never checked alone.
func TestABatchLandsAsOne(t *testing.T) {
	g := newTarget(t)
	before := g.land("z", g.approved("z"), g.key, nil)
	commits := g.batch([]string{"a", "b", "c"}, nil, nil)
	g.moveTo(commits[2])
	after := g.land("d", g.approved("d"), g.key, nil)

	rep := g.verify(g.key)
	require.True(t, rep.OK(), rep.Table())
	assert.Equal(t, 5, rep.Landed)
	head := commits[2]
	byCommit := map[string]Row{}
	for _, row := range rep.Rows {
		byCommit[row.Commit] = row
	}
	for _, c := range commits {
		assert.Equal(t, head, byCommit[c].Batch, c)
		assert.Equal(t, 3, byCommit[c].BatchSize, c)
		assert.Equal(t, byCommit[head].Tree, byCommit[c].PassedOn, "the head's tree passed")
	}
	assert.NotEqual(t, byCommit[commits[0]].Tree, byCommit[commits[0]].PassedOn, "not checked alone")
	assert.Empty(t, byCommit[before].Batch)
	assert.Empty(t, byCommit[after].Batch)
	table := rep.Table()
	assert.Contains(t, table, "(host, sandbox off), in a batch of 3 whose head is "+head[:12]+"; signed "+g.key.AgentID())
	assert.Equal(t, 3, strings.Count(table, "in a batch of 3"))
	assert.Contains(t, table, "main at "+after[:12]+" since "+g.start[:12]+": 5 commits, 5 landed by foreman, 0 not landed by foreman, 0 receipts refused")
}

// The run that passed on the head's tree may have checked another commit
// of that tree (a check before review, made on the train, whose tree the
// batch's head came out as): the tree is what counts, as for one landing.
func TestABatchWhoseTreePassedAsAnotherCommit(t *testing.T) {
	g := newTarget(t)
	commits := g.batch([]string{"a", "b"}, nil, func(_ int, l *receipt.Landing) {
		l.Checks.Commit, l.Checks.Kind = strings.Repeat("f", 40), "check"
	})
	g.moveTo(commits[1])
	rep := g.verify(g.key)
	require.True(t, rep.OK(), rep.Table())
	assert.Equal(t, 2, rep.Landed)
}

// A batch whose receipts do not all hold, or do not agree on the batch,
// is refused whole: a commit below the head is accepted only on its
// batch's checks, so none is accepted when the batch is not one.
func TestABatchWhoseReceiptsDisagreeIsRefusedWhole(t *testing.T) {
	cases := []struct {
		name string
		edit func(i int, l *receipt.Landing) // the i-th receipt of the batch, before it is signed
		bad  int                             // the commit that does not hold
		why  string                          // why, in its own row
	}{
		{"a member's receipt names no batch", func(i int, l *receipt.Landing) {
			if i == 1 {
				l.Batch = nil
			}
		}, 1, "refused: the checks its receipt names passed on tree "},
		{"the head's receipt names no batch", func(i int, l *receipt.Landing) {
			if i == 2 {
				l.Batch = nil
			}
		}, 2, "refused: its receipt names no batch, and "},
		{"a member's receipt names another head", func(i int, l *receipt.Landing) {
			if i == 0 {
				l.Batch = &receipt.Batch{Head: l.Batch.Commits[1], Commits: l.Batch.Commits[:2]}
				l.Checks.Commit = l.Batch.Head
			}
		}, 0, "refused: its receipt names a batch (head "},
		{"the checks did not pass on the head's tree", func(_ int, l *receipt.Landing) {
			l.Checks.Tree = strings.Repeat("e", 40)
		}, 2, "refused: the checks its receipt names passed on tree eeeeeeeeeeee"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newTarget(t)
			commits := g.batch([]string{"a", "b", "c"}, nil, tc.edit)
			g.moveTo(commits[2])
			rep := g.verify(g.key)
			assert.False(t, rep.OK())
			assert.Equal(t, 3, rep.Bad, rep.Table())
			v := verdicts(rep)
			assert.Contains(t, v[commits[tc.bad]], tc.why)
			for i, c := range commits {
				if i != tc.bad {
					assert.Contains(t, v[c], "refused: its batch (head "+commits[2][:12]+") does not hold: "+commits[tc.bad][:12]+": ", i)
				}
			}
		})
	}
}

// The attack a batch opens: a commit whose own tree never passed, with a
// receipt that says it landed in a batch whose head passed, while main
// stops at it (the head was never landed). It is refused, naming the
// head; and with no batch in its receipt it is refused for its tree.
func TestABatchWhoseHeadIsNotOnTheTarget(t *testing.T) {
	g := newTarget(t)
	commits := g.batch([]string{"a", "b", "c"}, nil, nil)
	g.moveTo(commits[1])
	rep := g.verify(g.key)
	assert.False(t, rep.OK())
	assert.Equal(t, 2, rep.Bad)
	v := verdicts(rep)
	notOnMain := "its receipt says it landed in a batch whose head " + commits[2][:12] + " is not on main above it"
	assert.Equal(t, "refused: "+notOnMain, v[commits[0]])
	assert.Equal(t, "refused: its batch (head "+commits[2][:12]+") does not hold: "+commits[0][:12]+": "+notOnMain, v[commits[1]])

	// The same receipt without its batch: judged alone, as ever.
	key, err := receipt.KeyOf(g.key.PublicPEM())
	require.NoError(t, err)
	note, err := g.repo.Note(ctx, receipt.NotesRef, commits[1])
	require.NoError(t, err)
	st, _, err := receipt.Open(note, []receipt.Key{key})
	require.NoError(t, err)
	st.Predicate.Batch = nil
	note, err = receipt.Sign(receipt.New(st.Predicate), g.key)
	require.NoError(t, err)
	require.NoError(t, g.repo.AddNote(ctx, receipt.NotesRef, commits[1], note))
	v = verdicts(g.verify(g.key))
	assert.Contains(t, v[commits[1]], "refused: the checks its receipt names passed on tree ")
}

// A batch whose commits are on main in another order than its receipts
// say is not the batch that was checked.
func TestABatchOutOfOrder(t *testing.T) {
	g := newTarget(t)
	g.land("z", g.approved("z"), g.key, nil)
	commits := g.batch([]string{"a", "b", "c"}, nil, func(_ int, l *receipt.Landing) {
		c := l.Batch.Commits
		l.Batch.Commits = []string{c[1], c[0], c[2]}
	})
	g.moveTo(commits[2])
	rep := g.verify(g.key)
	assert.False(t, rep.OK())
	assert.Equal(t, 3, rep.Bad, rep.Table())
	assert.Equal(t, 1, rep.Landed)
	v := verdicts(rep)
	assert.Contains(t, v[commits[0]], "refused: the batch its receipt names is not on main as one: its commit 1 of 3 is "+commits[1][:12])
	assert.Contains(t, v[commits[1]], "refused: its batch (head "+commits[2][:12]+") does not hold: "+commits[0][:12]+": the batch its receipt names is not on main as one")
	assert.Contains(t, v[commits[2]], "does not hold: "+commits[0][:12])
}

// --since in the middle of a batch: the batch cannot be checked whole,
// and verify says so rather than accept its upper commits.
func TestSinceCutsThroughABatch(t *testing.T) {
	g := newTarget(t)
	commits := g.batch([]string{"a", "b", "c"}, nil, nil)
	g.moveTo(commits[2])
	g.start = commits[0]
	rep := g.verify(g.key)
	assert.Equal(t, 2, len(rep.Rows))
	assert.Equal(t, 2, rep.Bad)
	v := verdicts(rep)
	assert.Equal(t, "refused: --since "+commits[0][:12]+" cuts through its batch: 1 of its 3 commits are not after it, so the batch cannot be checked as one; verify from before the batch", v[commits[1]])
	assert.Contains(t, v[commits[2]], "does not hold: "+commits[1][:12]+": --since")
}

// An approval lands once, in a batch too: a batch that lands again what
// landed before is refused whole, and its other approvals do not count
// as landed, so they may land later.
func TestABatchLandsAnApprovalOnce(t *testing.T) {
	g := newTarget(t)
	twice := g.approved("g")
	first := g.land("g", twice, g.key, nil)
	a, b := g.approved("a"), g.approved("b")
	commits := g.batch([]string{"a", "g", "b"}, []string{a, twice, b}, nil)
	g.moveTo(commits[2])
	later := g.land("a", a, g.key, nil)

	rep := g.verify(g.key)
	assert.Equal(t, 3, rep.Bad, rep.Table())
	v := verdicts(rep)
	assert.Equal(t, "landed: ", v[first])
	assert.Equal(t, "refused: it lands "+twice[:12]+" (g), which "+first[:12]+" landed before: an approval lands once", v[commits[1]])
	assert.Contains(t, v[commits[0]], "refused: its batch (head "+commits[2][:12]+") does not hold: "+commits[1][:12]+": it lands "+twice[:12])
	assert.Contains(t, v[commits[2]], "does not hold: "+commits[1][:12])
	assert.Equal(t, "landed: ", v[later])
}

// A receipt that says what its component cost shows it; one from before
// receipts said it (none) still holds and shows nothing; a cost that is
// not a decimal is never shown as it came.
func TestTheCostOfALanding(t *testing.T) {
	g := newTarget(t)
	a := g.land("a", g.approved("a"), g.key, nil)
	b := g.land("b", g.approved("b"), g.key, func(l *receipt.Landing) { l.Cost = &receipt.Cost{USD: "1.25", Tokens: 3000} })
	c := g.land("c", g.approved("c"), g.key, func(l *receipt.Landing) { l.Cost = &receipt.Cost{USD: "1.25\x1b[2J", Tokens: 3} })
	rep := g.verify(g.key)
	assert.True(t, rep.OK(), rep.Table())
	cost := map[string]string{}
	for _, row := range rep.Rows {
		cost[row.Commit] = row.Cost
	}
	assert.Equal(t, map[string]string{a: "", b: "$1.25 and 3000 tokens", c: "(not readable)"}, cost)
	assert.Contains(t, rep.Table(), "; cost $1.25 and 3000 tokens")
	assert.NotContains(t, rep.Table(), "\x1b")
}
