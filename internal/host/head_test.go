package host

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/host/receipt"
)

// opened is the landing a Land job's receipt states, checked against the
// harness's key.
func opened(t *testing.T, j Job) receipt.Landing { return openReceipt(t, j.Receipt) }

// signedLanding is landing's Land job, as started: its receipt and its
// place in the chain with it.
func (s *harness) signedLanding(a Actions) Job {
	s.t.Helper()
	car := s.started(a)
	require.NotNil(s.t, car.Pass, "%+v", car)
	p := car.Pass
	land, ok := startedOf(s.finish(car.Run, Outcome{Result: Passed, Reused: true, Commit: p.Commit, Tip: p.Tip, Base: p.Base, Tree: p.Tree}), Land)
	require.True(s.t, ok)
	return land
}

// started finds the job of kind a step started (the signed head's, say).
func startedOf(a Actions, kind Kind) (Job, bool) {
	for _, j := range a.Start {
		if j.Kind == kind {
			return j, true
		}
	}
	return Job{}, false
}

// Each landing's receipt names the repository and follows the one before
// it: one more, naming its digest; the first names where the host began.
// A batch chains its landings in order.
func TestReceiptsAreChained(t *testing.T) {
	s := trainHarness(t, 2)
	land := s.signedLanding(s.approve("a", "T"))
	p := opened(t, land)
	assert.Equal(t, receipt.PredicateType, receipt.New(p).PredicateType)
	assert.Equal(t, "shop", p.Repository)
	assert.Equal(t, &receipt.Chain{Seq: 1, Start: "T"}, p.Chain)
	s.finish(land.Run, Outcome{Result: Landed, Commit: "m-a"})
	first := receipt.Link{Seq: 1, Digest: receipt.StatementDigest(land.Receipt), Commit: "m-a", Start: "T"}
	assert.Equal(t, first, s.h.chain)

	land = s.signedLanding(s.approve("b", "m-a"))
	p = opened(t, land)
	assert.Equal(t, &receipt.Chain{Seq: 2, Previous: first.Digest}, p.Chain, "names the landing before it; only the first names the start")
	s.finish(land.Run, Outcome{Result: Landed, Commit: "m-b"})
	assert.Equal(t, 2, s.h.chain.Seq)
	assert.Equal(t, "T", s.h.chain.Start)
}

func TestABatchIsChainedInOrder(t *testing.T) {
	s := batchHarness(t, 1, 6, 0)
	for _, c := range []string{"a", "b", "c", "d", "e", "f"} {
		s.checked(c, "old")
	}
	_, land, whole := s.aThenFive()
	s.finish(land.Run, Outcome{Result: Landed, Commit: land.Commit})
	batch, ok := startedOf(s.finish(whole.Run, chainOut(Passed, "a", "b", "c", "d", "e", "f")), Land)
	require.True(t, ok)
	require.Len(t, batch.Batch, 4)
	prev := s.h.chain
	for i, l := range batch.Landings() {
		p := opened(t, l)
		assert.Equal(t, prev.Seq+1, p.Chain.Seq, "landing %d", i)
		assert.Equal(t, prev.Digest, p.Chain.Previous, "landing %d", i)
		assert.Equal(t, receipt.StatementDigest(l.Receipt), l.Chain.Digest)
		prev = *l.Chain
	}
	s.finish(batch.Run, Outcome{Result: Landed, Commit: batch.Commit})
	assert.Equal(t, prev, s.h.chain, "the batch's head is the chain's newest")
}

// A ledger read back, or compacted, continues the chain where it was.
func TestTheChainSurvivesARestartAndCompaction(t *testing.T) {
	s := trainHarness(t, 2)
	land := s.signedLanding(s.approve("a", "T"))
	s.finish(land.Run, Outcome{Result: Landed, Commit: "m-a"})
	want := s.h.chain

	next := s.restarted("m-a")
	assert.Equal(t, want, next.h.chain)
	var rp Replay
	for _, r := range s.recs {
		rp.Apply(r)
	}
	var again Replay
	for _, r := range Compacted(rp.State()) {
		again.Apply(r)
	}
	assert.Equal(t, want, again.State().Chain, "compaction keeps the chain's newest landing")

	next.h.Joined(next.now)
	next.foreman("STATUS a merged")
	land = next.signedLanding(next.approve("b", "m-a"))
	assert.Equal(t, &receipt.Chain{Seq: 2, Previous: want.Digest}, opened(t, land).Chain)
}

// A landing whose end the host does not know (cut short) is settled before
// another receipt is signed: two landings never claim one predecessor.
// Not made, the next landing takes its place in the chain.
func TestNothingIsSignedWhileALandingIsUnsettled(t *testing.T) {
	s := trainHarness(t, 2)
	land := s.signedLanding(s.approve("a", "T"))
	a := s.finish(land.Run, Outcome{Result: Cancelled})
	note, ok := startedOf(a, Note)
	require.True(t, ok, "the landing cut short is looked for on the target at once")
	assert.Equal(t, "m-a", note.Commit)
	_, ok = startedOf(a, Land)
	assert.False(t, ok, "no receipt while one is unsettled")

	// a is approved again meanwhile: nothing is signed until the note job says.
	a = s.foreman("STATUS a review owner=@ba pr=b/a approved=yes")
	for _, j := range queued(a) {
		assert.NotEqual(t, Land, j.Kind, "no receipt while one is unsettled")
	}
	a = s.finish(note.Run, Outcome{Result: Moved, Target: "T"})
	assert.Contains(t, a.Records, Record{Op: OpVoid, Commit: "m-a"})
	assert.Equal(t, 0, s.h.chain.Seq)
}

// The signed head names the chain's newest landing: written after every
// landing, and again every HeadEvery while nothing lands, one at a time.
func TestTheSignedHeadFollowsTheChain(t *testing.T) {
	s := trainHarness(t, 2)
	_, ok := s.h.NextWake()
	assert.False(t, ok, "nothing landed: no head to sign")
	land := s.signedLanding(s.approve("a", "T"))
	a := s.finish(land.Run, Outcome{Result: Landed, Commit: "m-a"})
	head, ok := startedOf(a, Head)
	require.True(t, ok, "a landing signs the head")
	key, err := receipt.KeyOf(testKey.PublicPEM())
	require.NoError(t, err)
	h, _, err := receipt.OpenHead(head.Receipt, []receipt.Key{key})
	require.NoError(t, err)
	assert.Equal(t, s.h.chain, h.Newest)
	assert.Equal(t, "shop", h.Repository)
	assert.Equal(t, "refs/heads/main", h.Target)
	assert.Equal(t, s.now, h.At)

	at, ok := s.h.NextWake()
	assert.False(t, ok && !at.After(s.now.Add(receipt.HeadEvery)), "not due while one is written: %v", at)
	s.finish(head.Run, Outcome{Result: Landed, Commit: "m-a"})
	at, ok = s.h.NextWake()
	require.True(t, ok)
	assert.Equal(t, s.now.Add(receipt.HeadEvery-time.Second), at, "signed again within the hour")
	a = s.tick(receipt.HeadEvery)
	again, ok := startedOf(a, Head)
	require.True(t, ok)
	h2, _, err := receipt.OpenHead(again.Receipt, []receipt.Key{key})
	require.NoError(t, err)
	assert.True(t, h2.At.After(h.At))
	assert.Equal(t, h.Newest, h2.Newest)

	// One that cannot be written is written again after the backoff.
	a = s.finish(again.Run, Outcome{Result: Retry, Line: "locked"})
	_, ok = startedOf(a, Head)
	assert.False(t, ok)
	_, ok = startedOf(s.tick(s.h.cfg.Backoff), Head)
	assert.True(t, ok)
}

// The ledger read back: each record counted, the trees that passed, where
// the chain began (the first landing's base, never a later one's), the jobs
// a crash cut short in the order they began; compacted, the same.
func TestTheLedgerReadBack(t *testing.T) {
	ev := receipt.Checks{Tree: "tr-a", Commands: []receipt.Command{}}
	recs := []Record{
		{Op: OpStart, Run: 7, Kind: "car", Component: "c"},
		{Op: OpStart, Run: 3, Kind: "car", Component: "a"},
		{Op: OpStart, Run: 5, Kind: "car", Component: "b"},
		{Op: OpTree, Run: 2, Component: "a", Checks: &ev},
		{Op: OpTree, Run: 2, Component: "a"}, // a record with no checks changes nothing
		{Op: OpLanded, Component: "a", Commit: "m-a", Base: "T", Tip: "t-a"},
		{Op: OpLanded, Component: "b", Commit: "m-b", Base: "m-a", Tip: "t-b"},
	}
	var rp Replay
	for _, r := range recs {
		rp.Apply(r)
	}
	assert.Equal(t, len(recs), rp.Records())
	st := rp.State()
	assert.Equal(t, "T", st.First, "where the first landing was made")
	require.Len(t, st.Trees, 1)
	assert.Equal(t, "tr-a", st.Trees[0].Tree)
	var runs []int
	for _, r := range st.InFlight {
		runs = append(runs, r.Run)
	}
	assert.Equal(t, []int{3, 5, 7}, runs, "in the order they began")

	var again Replay
	for _, r := range Compacted(st) {
		again.Apply(r)
	}
	assert.Equal(t, "T", again.State().First, "compaction keeps where the chain began")
	var first Replay
	first.Apply(Record{Op: OpFirst, Commit: "T0"})
	first.Apply(Record{Op: OpFirst, Commit: "T1"})
	assert.Equal(t, "T0", first.State().First)
}
