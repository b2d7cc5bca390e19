package verify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/host/receipt"
)

// now is the verifier's clock in these tests; the host signs its head
// a little before.
var now = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

func newChain(t testing.TB) *target {
	g := newTarget(t)
	g.chained = true
	return g
}

// signHead writes the host's signed head naming the chain's newest
// landing, signed at at, as the host does after each landing and hourly.
func (g *target) signHead(at time.Time, edit func(*receipt.Head)) {
	g.t.Helper()
	h := receipt.Head{Host: g.key.AgentID(), Repository: "shop", Target: "refs/heads/main", Newest: g.last, At: at}
	if edit != nil {
		edit(&h)
	}
	env, err := receipt.Sign(receipt.NewHead(h), g.key)
	require.NoError(g.t, err)
	blob, err := g.repo.WriteBlob(ctx, env)
	require.NoError(g.t, err)
	require.NoError(g.t, g.repo.SetRef(ctx, receipt.HeadRef("main"), blob, "head"))
}

// check verifies as foreman verify does with the host's key, from the
// chain's signed start, at now; opts changes the options first.
func (g *target) check(opts func(*Options)) Report {
	g.t.Helper()
	k, err := receipt.KeyOf(g.key.PublicPEM())
	require.NoError(g.t, err)
	o := Options{Repo: g.repo, Target: "main", Trusted: []receipt.Key{k}, Repository: "shop", Now: now}
	if opts != nil {
		opts(&o)
	}
	rep, err := Run(ctx, o)
	require.NoError(g.t, err)
	return rep
}

// lands lands n components, a0, a1, ..., each a receipt of the chain.
func (g *target) lands(n int) []string {
	var out []string
	for i := range n {
		c := "c" + string(rune('a'+i))
		out = append(out, g.land(c, g.approved(c), g.key, nil))
	}
	return out
}

// A chained history verifies from the start its first receipt signs,
// nothing else given: no ledger, no --since.
func TestAChainVerifiesFromItsSignedStart(t *testing.T) {
	g := newChain(t)
	landed := g.lands(3)
	g.signHead(now.Add(-time.Minute), nil)
	rep := g.check(nil)
	require.True(t, rep.OK(), rep.Table())
	assert.Equal(t, g.start, rep.Since, "where the host began, as landing 1's receipt says")
	assert.Equal(t, receipt.Link{Seq: 3, Digest: g.last.Digest, Commit: landed[2]}, rep.Newest)
	assert.Equal(t, []int{3, 2, 1}, []int{rep.Rows[0].Seq, rep.Rows[1].Seq, rep.Rows[2].Seq})
	assert.Contains(t, rep.Table(), "newest landing 3 ("+landed[2][:12]+"), not rolled back: anchored by the host's head, signed 2026-11-28T11:59:00Z, names landing 3")
}

// Hole 1: the target forced back three landings, its notes and all,
// verified commit by commit as before; the signed head, or the state
// file, says it was rolled back and names the landings lost.
func TestARollbackIsRefused(t *testing.T) {
	g := newChain(t)
	landed := g.lands(5)
	g.signHead(now.Add(-10*time.Minute), nil)
	state := filepath.Join(t.TempDir(), "state.json")
	rep := g.check(func(o *Options) { o.State = state })
	require.True(t, rep.OK(), rep.Table())

	// Forced back to landing 2: every receipt left holds.
	require.NoError(t, g.repo.UpdateRef(ctx, "refs/heads/main", landed[1], landed[4], "force"))
	rep = g.check(nil)
	assert.False(t, rep.OK())
	assert.Equal(t, 2, rep.Landed, "each commit left holds")
	assert.Contains(t, rep.Rollback, "main was rolled back: the host's head, signed 2026-11-28T11:50:00Z, names landing 5 ("+landed[4][:12]+"), which main does not hold; landings 3 to 5 are lost")

	// The head put back too (an old one, as it stood at landing 2): the
	// state file names what was lost.
	g.last = receipt.Link{Seq: 2, Digest: rep.Newest.Digest, Commit: landed[1]}
	g.signHead(now.Add(-30*time.Minute), nil)
	rep = g.check(func(o *Options) { o.State = state })
	assert.False(t, rep.OK())
	assert.Contains(t, rep.Rollback, "main was rolled back below landing 5 ("+landed[4][:12]+"), which verify accepted on 2026-11-28T12:00:00Z; landings 3 to 5 are lost: 3 cc ("+landed[2][:12]+"), 4 cd ("+landed[3][:12]+"), 5 ce ("+landed[4][:12]+")")

	// Without the state, a head that old anchors the rollback as newest.
	rep = g.check(nil)
	assert.True(t, rep.OK(), "within --max-age, a put-back head is indistinguishable: the state file is what tells")
	rep = g.check(func(o *Options) { o.MaxAge = 20 * time.Minute })
	assert.False(t, rep.OK())
	assert.Contains(t, rep.Unanchored, "rollback not checked: the host's signed head is older than --max-age 20m0s (signed 2026-11-28T11:30:00Z)")
}

// With neither a state file nor a signed head, verify says plainly that
// rollback was not checked, and exits non-zero unless told to accept it.
func TestNothingAnchorsIsSaid(t *testing.T) {
	g := newChain(t)
	g.lands(2)
	rep := g.check(nil)
	assert.False(t, rep.OK())
	assert.Equal(t, 0, rep.Bad+rep.ByHand)
	assert.Equal(t, "rollback not checked: no signed head of the host's at refs/foreman/head/main; no --state", rep.Unanchored)
	assert.Contains(t, rep.Table(), "NOT CHECKED: newest landing 2")
	rep = g.check(func(o *Options) { o.Unanchored = true })
	assert.True(t, rep.OK())
	assert.Contains(t, rep.Table(), "(accepted: --unanchored)")

	// A state file made then anchors the next verify.
	state := filepath.Join(t.TempDir(), "state.json")
	rep = g.check(func(o *Options) { o.Unanchored, o.State = true, state })
	require.True(t, rep.OK())
	rep = g.check(func(o *Options) { o.State = state })
	assert.True(t, rep.OK(), rep.Table())
	assert.Contains(t, rep.Anchors[0], "the state file, where landing 2 was accepted")
}

// Hole 2: a fork whose host uses the same key. Its receipts name its own
// repository (or, named the same, begin a chain of their own): a landing
// of the fork's pushed to this target is refused.
func TestAForkWithTheSameKeyIsRefused(t *testing.T) {
	g := newChain(t)
	g.lands(2)
	fork := newChain(t)
	fork.repo, fork.start, fork.key = g.repo, g.start, g.key
	fork.last = receipt.Link{}
	// The fork lands its own work on its own main (same root), then its
	// commit, note and all, is pushed on top of this main.
	tip := g.approved("evil")
	alien := fork.land("evil", tip, g.key, func(l *receipt.Landing) { l.Repository = "shop-fork" })
	g.signHead(now, nil)
	v := verdicts(g.check(nil))
	assert.Equal(t, "refused: its receipt lands it in repository shop-fork, not in shop (host.repository)", v[alien])

	// Named the same, its chain is its own: it begins again.
	named := newChain(t)
	named.repo, named.start, named.key = g.repo, g.start, g.key
	same := named.land("evil2", g.approved("evil2"), g.key, nil)
	v = verdicts(g.check(nil))
	assert.Contains(t, v[same], "refused: its receipt begins a chain again, above landing 2")
}

// Hole 3: the start comes from the receipts, signed, never from the
// host's ledger: a record put in front of the ledger to move the start
// past a hand commit changes nothing, and a cluster's ledger (in
// JetStream) is not needed.
func TestTheStartIsSignedNotTheLedgers(t *testing.T) {
	g := newChain(t)
	g.lands(1)
	hand := g.byHand("a fix straight to main")
	g.lands(1)
	g.signHead(now, nil)
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger.jsonl")
	require.NoError(t, os.WriteFile(ledger, []byte(`{"op":"first","commit":"`+hand+`"}`+"\n"), 0o644))
	pub := filepath.Join(dir, "host.pub")
	require.NoError(t, os.WriteFile(pub, []byte(g.key.PublicPEM()), 0o644))
	for _, yaml := range []string{
		"host:\n  repo: " + g.repo.Dir() + "\n  repository: shop\n  ledger: " + ledger + "\n  identity: " + filepath.Join(dir, "none.json") + "\n",
		"cluster:\n  nats: nats://127.0.0.1:4222\nhost:\n  repo: " + g.repo.Dir() + "\n  repository: shop\n  identity: " + filepath.Join(dir, "none.json") + "\n",
	} {
		file := filepath.Join(dir, "foreman.yaml")
		require.NoError(t, os.WriteFile(file, []byte(yaml), 0o644))
		c, err := config.Load(file, nil, nil)
		require.NoError(t, err)
		o, err := Configure(ctx, c, []string{pub}, "")
		require.NoError(t, err)
		o.Now = now
		rep, err := Run(ctx, o)
		require.NoError(t, err)
		assert.False(t, rep.OK())
		assert.Equal(t, g.start, rep.Since)
		assert.Equal(t, 1, rep.ByHand, rep.Table())
		assert.Contains(t, verdicts(rep)[hand], "by-hand")
	}
}

// The chain's own faults, each refused where it breaks.
func TestAChainThatDoesNotHold(t *testing.T) {
	t.Run("a landing taken out", func(t *testing.T) {
		g := newChain(t)
		g.lands(1)
		two := g.land("b", g.approved("b"), g.key, nil)
		// Landing 2 dropped from main, landing 3 made on landing 1 by a
		// host that believed 2 landed.
		require.NoError(t, g.repo.UpdateRef(ctx, "refs/heads/main", mustParent(t, g, two), two, "drop"))
		three := g.land("c", g.approved("c"), g.key, nil)
		g.signHead(now, nil)
		v := verdicts(g.check(nil))
		assert.Contains(t, v[three], "refused: its receipt (landing 3) follows a landing that is not the one before it on this branch, landing 1")
	})
	t.Run("two landings claim one predecessor", func(t *testing.T) {
		g := newChain(t)
		g.lands(1)
		one := g.last
		g.land("b", g.approved("b"), g.key, nil)
		g.last = one // a host that forgot landing 2
		again := g.land("c", g.approved("c"), g.key, nil)
		g.signHead(now, nil)
		v := verdicts(g.check(nil))
		assert.Contains(t, v[again], "refused: its receipt follows the landing")
		assert.Contains(t, v[again], "two landings claim one predecessor")
	})
	t.Run("a counter that skips", func(t *testing.T) {
		g := newChain(t)
		g.lands(1)
		skip := g.land("b", g.approved("b"), g.key, func(l *receipt.Landing) { l.Chain.Seq = 5 })
		g.signHead(now, nil)
		assert.Contains(t, verdicts(g.check(nil))[skip], "refused: its receipt says it is landing 5, and it follows landing 1")
	})
	t.Run("an unchained receipt above a chained one", func(t *testing.T) {
		g := newChain(t)
		g.lands(1)
		g.chained = false
		old := g.land("b", g.approved("b"), g.key, nil)
		g.chained = true
		g.signHead(now, nil)
		assert.Contains(t, verdicts(g.check(nil))[old], "refused: its receipt has no place in a chain (a receipt of version 1), above landing 1")
	})
	t.Run("receipts of version 1 below the chain still hold", func(t *testing.T) {
		g := newTarget(t)
		first := g.land("a", g.approved("a"), g.key, nil)
		g.chained = true
		g.land("b", g.approved("b"), g.key, func(l *receipt.Landing) { l.Chain.Start = g.start })
		g.signHead(now, nil)
		rep := g.check(nil)
		assert.True(t, rep.OK(), rep.Table())
		assert.Equal(t, "landed: ", verdicts(rep)[first])
	})
	t.Run("a key rotated mid-chain", func(t *testing.T) {
		g := newChain(t)
		old := g.key
		g.lands(1)
		g.key = agentchat.IdentityFromSeed("host", [32]byte{5})
		g.land("b", g.approved("b"), g.key, nil)
		g.signHead(now, nil)
		rep := g.check(func(o *Options) {
			k, err := receipt.KeyOf(old.PublicPEM())
			require.NoError(t, err)
			o.Trusted = append(o.Trusted, k)
		})
		assert.True(t, rep.OK(), rep.Table())
	})
}

func mustParent(t *testing.T, g *target, commit string) string {
	t.Helper()
	p, err := g.repo.RevParse(ctx, commit+"^1")
	require.NoError(t, err)
	return p
}

// What anchors the newest landing, when it cannot be taken.
func TestAnchorsThatDoNotHold(t *testing.T) {
	g := newChain(t)
	g.lands(2)
	state := filepath.Join(t.TempDir(), "state.json")
	g.signHead(now.Add(-time.Minute), nil)
	require.True(t, g.check(func(o *Options) { o.State = state }).OK())

	t.Run("a head older than the state's", func(t *testing.T) {
		g.signHead(now.Add(-2*time.Hour), nil)
		rep := g.check(func(o *Options) { o.State = state })
		assert.Contains(t, rep.Rollback, "is older than the one verify saw before (signed 2026-11-28T11:59:00Z): an old head was put back, to freeze main")
	})
	t.Run("a head of another repository", func(t *testing.T) {
		g.signHead(now, func(h *receipt.Head) { h.Repository = "shop-fork" })
		assert.Equal(t, "the host's signed head at refs/foreman/head/main is for repository shop-fork, not shop", g.check(nil).Rollback)
	})
	t.Run("a head signed by another key", func(t *testing.T) {
		key := g.key
		g.key = agentchat.IdentityFromSeed("stranger", [32]byte{8})
		g.signHead(now, nil)
		g.key = key
		assert.Contains(t, g.check(nil).Rollback, "the host's signed head at refs/foreman/head/main does not hold: signed by")
	})
	t.Run("a corrupt state file", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.json")
		require.NoError(t, os.WriteFile(bad, []byte("{not json"), 0o644))
		k, err := receipt.KeyOf(g.key.PublicPEM())
		require.NoError(t, err)
		_, err = Run(ctx, Options{Repo: g.repo, Target: "main", Trusted: []receipt.Key{k}, Repository: "shop", State: bad})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "--state "+bad+": not a state file of foreman verify")
		assert.Contains(t, err.Error(), "delete it to start again")
	})
	t.Run("a state file of another repository", func(t *testing.T) {
		k, err := receipt.KeyOf(g.key.PublicPEM())
		require.NoError(t, err)
		_, err = Run(ctx, Options{Repo: g.repo, Target: "main", Trusted: []receipt.Key{k}, Repository: "other", State: state})
		assert.ErrorContains(t, err, "it keeps repository shop, branch main, and this is other, branch main; give each its own state file")
	})
}

// A history with no chain (receipts of hosts before chains) needs a start
// from the caller.
func TestNoChainNeedsSince(t *testing.T) {
	g := newTarget(t)
	g.land("a", g.approved("a"), g.key, nil)
	k, err := receipt.KeyOf(g.key.PublicPEM())
	require.NoError(t, err)
	_, err = Run(ctx, Options{Repo: g.repo, Target: "main", Trusted: []receipt.Key{k}, Repository: "shop"})
	require.Error(t, err)
	assert.True(t, strings.HasSuffix(err.Error(), "give --since <the target before the first landing>"), err.Error())
}
