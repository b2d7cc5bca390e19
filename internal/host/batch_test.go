package host

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/host/receipt"
)

func batchHarness(t *testing.T, parallel, batch, depth int) *harness {
	s := newHarness(t, func(c *Config) {
		c.MaxParallel, c.Batch, c.FailureDepth = parallel, batch, depth
		c.Components = []string{"a", "b", "c", "d", "e", "f"}
	})
	s.h.Target(s.now, "T")
	return s
}

// aThenFive approves a, whose car takes the last free slot, then b to f
// behind it; a passes: a's landing and one check of f's chain, on a to e,
// start. It returns a's car, its landing and f's check.
func (s *harness) aThenFive() (first, land, whole Job) {
	s.t.Helper()
	first = s.started(s.approved("a"))
	require.Equal(s.t, Car, first.Kind)
	for _, c := range []string{"b", "c", "d", "e", "f"} {
		assert.Empty(s.t, queued(s.approved(c)), "the slots are busy")
	}
	a := s.finish(first.Run, chainOut(Passed, "a"))
	land, whole = jobsBy(a)["a"], jobsBy(a)["f"]
	require.Equal(s.t, Land, land.Kind)
	require.Equal(s.t, Car, whole.Kind, "one check for the five, behind a's landing")
	assert.Equal(s.t, links("a", "b", "c", "d", "e"), whole.Ahead)
	return first, land, whole
}

// chainOut is what a car's check of the chain T+names says, each link's
// commit m-<the names up to it> with tree tr-<the same>.
func chainOut(r Result, names ...string) Outcome {
	o := Outcome{Result: r, Base: "T", Line: "make test: FAIL"}
	id := "m-"
	for _, n := range names {
		id += n
		o.Chain = append(o.Chain, Made{Commit: id, Tree: "tr-" + id[2:]})
	}
	o.Commit, o.Tree = id, "tr-"+id[2:]
	if r == Passed {
		o.Line = ""
	}
	return o
}

func openReceipt(t *testing.T, env []byte) receipt.Landing {
	t.Helper()
	key, err := receipt.KeyOf(testKey.PublicPEM())
	require.NoError(t, err)
	st, _, err := receipt.Open(env, []receipt.Key{key})
	require.NoError(t, err)
	return st.Predicate
}

// A batch of five behind a busy slot is checked once, at its last car; it
// fails, and bisection finds the one car whose failure is its own (three
// runs), the cars ahead of it land at once by one compare-and-swap, each
// with its receipt naming the tree that passed, and the cars behind it are
// checked again without it.
func TestABatchIsBisectedToItsCulprit(t *testing.T) {
	s := batchHarness(t, 1, 6, 0)
	for _, c := range []string{"a", "b", "c", "d", "e", "f"} {
		s.checked(c, "old")
	}
	_, land, whole := s.aThenFive()
	assert.Empty(t, land.Batch, "a alone")
	assert.Empty(t, queued(s.finish(land.Run, Outcome{Result: Landed, Commit: "m-a"})))

	// f's chain fails: the middle of b..e is checked, as if the rest passes.
	half := s.started(s.finish(whole.Run, chainOut(Failed, "a", "b", "c", "d", "e", "f")))
	assert.Equal(t, "c", half.Component)
	view := s.h.Queue().Train
	assert.Equal(t, "checking", view[1].State)
	assert.Equal(t, "bisecting the batch whose chain up to f failed: 5 cars in question, b to f", view[1].Why, "c")
	assert.Equal(t, "in the batch checked with c", view[0].Why, "b")
	// c's chain passed: b and c land at once, by one compare-and-swap to
	// c's chain; d, the middle of d..e, is checked meanwhile.
	a := s.finish(half.Run, chainOut(Passed, "a", "b", "c"))
	batch, next := jobsBy(a)["c"], jobsBy(a)["d"]
	require.Equal(t, Land, batch.Kind)
	assert.Equal(t, "m-a", batch.From())
	assert.Equal(t, "m-abc", batch.Commit)
	assert.Equal(t, "tr-abc", batch.Tree)
	require.Len(t, batch.Batch, 1)
	b := batch.Batch[0]
	assert.Equal(t, []string{"b", "m-a", "m-ab", "tr-ab", "t-b"}, []string{b.Component, b.Base, b.Commit, b.Tree, b.Tip})
	for _, j := range a.Start {
		if j.Run == batch.Run {
			batch = j // with its receipts
		}
	}
	for _, l := range batch.Landings() {
		p := openReceipt(t, l.Receipt)
		assert.Equal(t, l.Commit, p.Commit)
		assert.Equal(t, l.Base, p.LandedOn)
		assert.Equal(t, "tr-abc", p.Checks.Tree, "the batch's head's tree passed")
		assert.Equal(t, half.Run, p.Checks.Run)
		assert.Equal(t, &receipt.Batch{Head: "m-abc", Commits: []string{"m-ab", "m-abc"}}, p.Batch)
	}
	assert.Equal(t, links("a", "b", "c"), next.Ahead)
	a = s.finish(next.Run, chainOut(Failed, "a", "b", "c", "d"))
	assert.Contains(t, a.Say, "CI d FAIL m-abcd make test: FAIL", "on top of b and c, which passed: d's own")
	again := jobsBy(a)["f"]
	assert.Equal(t, links("a", "b", "c", "e"), again.Ahead, "f again, without d")

	a = s.finish(batch.Run, Outcome{Result: Landed, Commit: "m-abc"})
	assert.Equal(t, []string{
		"queue: b landed on main at m-ab; receipt: git notes --ref foreman show m-ab", "MERGED b",
		"queue: c landed on main at m-abc; receipt: git notes --ref foreman show m-abc", "MERGED c",
	}, a.Say)
	a = s.finish(again.Run, chainOut(Passed, "a", "b", "c", "e", "f"))
	last := s.started(a)
	assert.Equal(t, []string{"e", "f"}, []string{last.Batch[0].Component, last.Component})
	a = s.finish(last.Run, Outcome{Result: Landed, Commit: "m-abcef"})
	assert.Contains(t, a.Say, "MERGED e")
	assert.Contains(t, a.Say, "MERGED f")
	assert.Empty(t, s.h.Queue().Train)
	assert.Equal(t, 5, s.h.Queue().CheckRuns-6, "the six checks before review, then a, f, c, d, f: five")
}

// A failure waits (host.failure_depth): the cars behind it, whose chains
// hold it, go on being checked, and when one passes, the failure was not
// the car's to carry (a flake, or an interaction a car behind resolves):
// it lands with that chain.
func TestAFailureThatWaits(t *testing.T) {
	s := batchHarness(t, 2, 2, 1)
	for _, c := range []string{"a", "b"} {
		s.checked(c, "old")
	}
	cars := map[string]Job{}
	for _, c := range []string{"a", "b"} {
		cars[c] = s.started(s.approved(c))
	}
	a := s.finish(cars["a"].Run, chainOut(Failed, "a"))
	assert.Empty(t, a.Say, "a's failure waits while b's chain, which holds a, is checked")
	a = s.finish(cars["b"].Run, chainOut(Passed, "a", "b"))
	land := s.started(a)
	assert.Equal(t, "b", land.Component)
	require.Len(t, land.Batch, 1)
	assert.Equal(t, "a", land.Batch[0].Component)
	a = s.finish(land.Run, Outcome{Result: Landed, Commit: "m-ab"})
	assert.Contains(t, a.Say, "MERGED a")
	assert.Contains(t, a.Say, "MERGED b")

	// Covered before its own result came: its run is stopped, it lands.
	s = batchHarness(t, 2, 2, 0)
	for _, c := range []string{"a", "b"} {
		s.checked(c, "old")
	}
	for _, c := range []string{"a", "b"} {
		cars[c] = s.started(s.approved(c))
	}
	a = s.finish(cars["b"].Run, chainOut(Passed, "a", "b"))
	assert.Equal(t, []int{cars["a"].Run}, a.Cancel)
	land = s.started(a)
	require.Len(t, land.Batch, 1)
}

// A failure that waits, and the cars behind it fail too: it was its own.
// Without host.failure_depth it is blamed at once, and the cars behind it
// are checked without it.
func TestAFailureThatWaitsInVain(t *testing.T) {
	for _, depth := range []int{0, 2} {
		s := batchHarness(t, 1, 3, depth)
		for _, c := range []string{"a", "b", "c"} {
			s.checked(c, "old")
		}
		first := s.started(s.approved("a"))
		s.approved("b")
		s.approved("c")
		a := s.finish(first.Run, chainOut(Failed, "a"))
		if depth == 0 {
			assert.Contains(t, a.Say, "CI a FAIL m-a make test: FAIL")
			next := s.started(a)
			assert.Equal(t, "c", next.Component)
			assert.Equal(t, links("b"), next.Ahead, "b and c, without a")
			continue
		}
		assert.Empty(t, a.Say)
		c := s.started(a)
		assert.Equal(t, links("a", "b"), c.Ahead, "the two cars behind a, with a")
		a = s.finish(c.Run, chainOut(Failed, "a", "b", "c"))
		assert.Empty(t, a.Say)
		b := s.started(a)
		assert.Equal(t, "b", b.Component, "bisected")
		assert.Equal(t, links("a"), b.Ahead)
		a = s.finish(b.Run, chainOut(Failed, "a", "b"))
		assert.Contains(t, a.Say, "CI a FAIL m-a make test: FAIL")
		assert.Equal(t, links("b"), s.started(a).Ahead, "b and c again, without a")
	}
}

// With batching off (host.batch.max 1) every commit the target holds had
// its own tree pass: a car behind whose chain passed while the car ahead's
// run was lost (a worker killed, a standby taking over) waits for the car
// ahead, which is checked again, and each lands on its own.
func TestWithBatchingOffACarBehindThatPassedFirstWaits(t *testing.T) {
	s := batchHarness(t, 2, 1, 0)
	for _, c := range []string{"a", "b"} {
		s.checked(c, "old")
	}
	cars := map[string]Job{}
	for _, c := range []string{"a", "b"} {
		cars[c] = s.started(s.approved(c))
	}
	a := s.finish(cars["a"].Run, Outcome{Result: Retry, Line: "the worker running it was killed"})
	assert.Empty(t, jobsBy(a))
	a = s.finish(cars["b"].Run, chainOut(Passed, "a", "b"))
	assert.Empty(t, a.Cancel)
	for _, j := range queued(a) {
		assert.NotEqual(t, Land, j.Kind, "b's pass does not land a, whose own tree nothing passed")
	}
	again := s.started(s.tick(time.Hour))
	assert.Equal(t, "a", again.Component, "a checked again")
	land := s.started(s.finish(again.Run, chainOut(Passed, "a")))
	assert.Equal(t, "a", land.Component)
	assert.Empty(t, land.Batch)
	land = s.started(s.finish(land.Run, Outcome{Result: Landed, Commit: "m-a"}))
	assert.Equal(t, "b", land.Component, "then b, on its own pass")
	assert.Empty(t, land.Batch)
}

// READYs queued behind a busy slot are checked as one tree
// (host.batch.max); one of them leaving CI meanwhile puts the others back,
// each to be checked alone; a shared check that fails does the same, and
// nobody is blamed for it.
func TestSharedChecksBeforeReview(t *testing.T) {
	s := batchHarness(t, 1, 4, 0)
	for _, c := range []string{"a", "b", "c", "d"} {
		s.built(c, "@b"+c)
	}
	first := s.started(s.hear("@ba", "READY a b/a"))
	for _, c := range []string{"b", "c", "d"} {
		assert.Empty(t, queued(s.hear("@b"+c, "READY "+c+" b/"+c)))
	}
	a := s.finish(first.Run, Outcome{Result: Passed, Commit: "m-a", Tip: "t-a", Base: "T", Tree: "tr-a"})
	shared := s.started(a)
	assert.Equal(t, "d", shared.Component)
	assert.Equal(t, []Link{{Component: "b", Ref: "b/b", Owner: "@bb"}, {Component: "c", Ref: "b/c", Owner: "@bc"}}, shared.Ahead)

	// c leaves CI (FIX): b and d are checked alone.
	a = s.foreman("FIX c @bc 1/5 reworked")
	assert.Equal(t, []int{shared.Run}, a.Cancel)
	alone := s.started(a)
	assert.Equal(t, "b", alone.Component)
	assert.Empty(t, alone.Ahead)
	a = s.finish(alone.Run, Outcome{Result: Passed, Commit: "m-b", Tip: "t-b", Base: "T", Tree: "tr-b"})
	assert.Contains(t, a.Say, "CI b PASS m-b")
	d := s.started(a)
	assert.Equal(t, "d", d.Component)
	assert.Empty(t, d.Ahead)

	// A shared check that passes: each passed, and the tree is the head's.
	s, shared = sharedOfTwo(t)
	o := chainOut(Passed, "b", "c")
	o.Chain[0].Tip, o.Chain[1].Tip = "t-b", "t-c"
	a = s.finish(shared.Run, o)
	assert.Equal(t, []string{
		"CI b PASS m-b (checked merged with main as b+c: one run for 2)",
		"CI c PASS m-bc (checked merged with main as b+c: one run for 2)",
	}, a.Say)
	_, known := s.h.trees.get("tr-bc")
	assert.True(t, known, "the head's tree passed")
	_, known = s.h.trees.get("tr-b")
	assert.False(t, known, "b's own merge was not checked alone: never reused as if it passed")
	assert.Equal(t, "t-b", s.h.passes["b"].Tip)

	// One that fails: each alone, no verdict.
	s, shared = sharedOfTwo(t)
	a = s.finish(shared.Run, chainOut(Failed, "b", "c"))
	assert.Empty(t, a.Say)
	alone = s.started(a)
	assert.Equal(t, "b", alone.Component)
	assert.Empty(t, alone.Ahead)
}

// sharedOfTwo: a's check holds the one slot while b and c say READY; when
// it ends, b and c are checked as one tree: that job.
func sharedOfTwo(t *testing.T) (*harness, Job) {
	s := batchHarness(t, 1, 4, 0)
	for _, c := range []string{"a", "b", "c"} {
		s.built(c, "@b"+c)
	}
	first := s.started(s.hear("@ba", "READY a b/a"))
	s.hear("@bb", "READY b b/b")
	s.hear("@bc", "READY c b/c")
	shared := s.started(s.finish(first.Run, Outcome{Result: Passed, Commit: "m-a", Tip: "t-a", Base: "T", Tree: "tr-a"}))
	require.Equal(t, []string{"b"}, []string{shared.Ahead[0].Component})
	return s, shared
}

// With host.batch.max above 1 a READY is checked where it would land: on
// the train's chain; approved next, its car's chain is that tree, which
// the shell finds passed (Job.Passed): no check in the train. One that
// fails there is checked again on the target.
func TestAReadyIsCheckedOnTheTrain(t *testing.T) {
	s := batchHarness(t, 2, 4, 0)
	s.checked("a", "old")
	car := s.started(s.approved("a"))
	s.built("b", "@bb")
	var check Job
	for _, j := range s.hear("@bb", "READY b b/b").Start {
		check = j
	}
	assert.Equal(t, "T", check.Base)
	require.Len(t, check.OnTrain, 1)
	assert.Equal(t, "a", check.OnTrain[0].Component)
	assert.Equal(t, "t-a", check.OnTrain[0].Tip)
	o := chainOut(Passed, "a", "b")
	o.Chain[1].Tip = "t-b"
	a := s.finish(check.Run, o)
	assert.Equal(t, []string{"CI b PASS m-ab (checked merged with main+a as b: one run for 1)"}, a.Say)

	land := s.started(s.finish(car.Run, chainOut(Passed, "a")))
	s.finish(land.Run, Outcome{Result: Landed, Commit: "m-a"})
	var again Job
	for _, j := range s.approved("b").Start {
		again = j
	}
	assert.Equal(t, Car, again.Kind)
	assert.Equal(t, "m-a", again.Base, "a landed: made on it, the same tree as T+a+b")
	assert.Contains(t, again.Passed, "tr-ab", "its chain's tree passed before review: the shell does not check it")

	// A check that failed on the train is checked again on the target
	// (READYs checked together stay together), before anyone hears of it.
	land = s.started(s.finish(again.Run, Outcome{Result: Passed, Reused: true, Commit: "m-ab", Tree: "tr-ab", Base: "m-a", Chain: []Made{{Commit: "m-ab", Tree: "tr-ab"}}}))
	s.finish(land.Run, Outcome{Result: Landed, Commit: "m-ab"})
	s.built("c", "@bc")
	s.checked("d", "old")
	car = s.started(s.approved("d"))
	for _, j := range s.hear("@bc", "READY c b/c").Start {
		check = j
	}
	require.NotEmpty(t, check.OnTrain)
	a = s.finish(check.Run, Outcome{Result: Failed, Commit: "m-dc", Line: "make test: FAIL"})
	assert.Empty(t, a.Say)
	alone := s.started(a)
	assert.Equal(t, "c", alone.Component)
	assert.Empty(t, alone.OnTrain)
	assert.Contains(t, s.finish(alone.Run, Outcome{Result: Failed, Commit: "m-c", Line: "make test: FAIL"}).Say, "CI c FAIL m-c make test: FAIL")
}

// A shared check that fails is run once (no host.retries: it blames
// nobody) and checked again in as many parts as slots are free, each once
// too, down to one READY alone, whose failure is retried before it is its
// own.
func TestASharedCheckThatFailsIsSplitAcrossTheFreeSlots(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}
	s := newHarness(t, func(c *Config) { c.MaxParallel, c.Batch, c.Retries, c.Components = 3, 6, 1, names })
	s.h.Target(s.now, "T")
	for _, c := range names {
		s.built(c, "@b"+c)
	}
	var first []Job
	for _, c := range names[:3] {
		first = append(first, s.started(s.hear("@b"+c, "READY "+c+" b/"+c)))
		assert.False(t, first[len(first)-1].Once, "alone: a failure is retried before it is the builder's")
	}
	for _, c := range names[3:] {
		assert.Empty(t, queued(s.hear("@b"+c, "READY "+c+" b/"+c)))
	}
	shared := s.started(s.finish(first[0].Run, Outcome{Result: Passed, Commit: "m-a", Tip: "t-a", Base: "T", Tree: "tr-a"}))
	assert.Equal(t, "i", shared.Component)
	assert.Len(t, shared.Ahead, 5)
	assert.True(t, shared.Once)
	assert.Equal(t, 1, s.h.running[shared.Run].Tries, "run once: no retry")
	for _, j := range first[1:] {
		s.finish(j.Run, Outcome{Result: Passed, Commit: "m-" + j.Component, Tip: "t-" + j.Component, Base: "T", Tree: "tr-" + j.Component})
	}

	a := s.finish(shared.Run, chainOut(Failed, "d", "e", "f", "g", "h", "i"))
	assert.Empty(t, a.Say, "nobody's failure")
	parts := queued(a)
	require.Len(t, parts, 3, "three slots free: three parts")
	for i, want := range [][]string{{"d", "e"}, {"f", "g"}, {"h", "i"}} {
		assert.Equal(t, want[1], parts[i].Component)
		require.Len(t, parts[i].Ahead, 1)
		assert.Equal(t, want[0], parts[i].Ahead[0].Component)
		assert.Empty(t, parts[i].OnTrain, "checked again on the target")
		assert.True(t, parts[i].Once)
	}

	// d+e passes; f+g fails: split again in two (one slot free, but two
	// parts at least), each alone, retried before it is blamed.
	a = s.finish(parts[0].Run, chainOut(Passed, "d", "e"))
	assert.Len(t, a.Say, 2)
	a = s.finish(parts[1].Run, chainOut(Failed, "f", "g"))
	assert.Empty(t, a.Say)
	alone := queued(a)
	require.Len(t, alone, 2, "%+v", alone)
	for i, c := range []string{"f", "g"} {
		assert.Equal(t, c, alone[i].Component)
		assert.Empty(t, alone[i].Ahead)
		assert.False(t, alone[i].Once)
		assert.Equal(t, 2, s.h.running[alone[i].Run].Tries, "once, then host.retries again")
	}
}

// With host.retries, a batch's chain that fails is not run again: it is
// bisected at once, the cars ahead of the failure cut evenly across the
// free slots. A failure found on top of a chain that passed in a run that
// was once is checked once more (the retry it did not have) before it is
// blamed, and a failure that passes then was a flake: nobody is blamed,
// and it lands.
func TestABatchIsBisectedAcrossTheSlotsAndItsCulpritCheckedAgain(t *testing.T) {
	s := newHarness(t, func(c *Config) {
		c.MaxParallel, c.Batch, c.Retries = 3, 6, 1
		c.Components = []string{"a", "b", "c", "d", "e", "f", "x", "y"}
	})
	s.h.Target(s.now, "T")
	for _, c := range []string{"a", "b", "c", "d", "e", "f"} {
		s.checked(c, "old")
	}
	var busy []Job // two slots, while the cars are approved
	for _, c := range []string{"x", "y"} {
		s.built(c, "@b"+c)
		busy = append(busy, s.started(s.hear("@b"+c, "READY "+c+" b/"+c)))
	}
	first, land, whole := s.aThenFive()
	assert.False(t, first.Once, "the front car: its failure is its own, retried in its run")
	assert.True(t, whole.Once, "behind cars with no result: a failure is bisected, not retried")
	assert.Empty(t, queued(s.finish(land.Run, Outcome{Result: Landed, Commit: "m-a"})))
	for _, j := range busy {
		s.finish(j.Run, Outcome{Result: Passed, Commit: "m-" + j.Component, Tip: "t-" + j.Component, Base: "m-a", Tree: "tr-" + j.Component})
	}

	// f's chain fails once: b..e, four cars, three free slots: b, c and d
	// are checked at once, each judged by the run just ahead of it (its
	// own failure retried in its run).
	a := s.finish(whole.Run, chainOut(Failed, "a", "b", "c", "d", "e", "f"))
	assert.Empty(t, a.Say)
	points := jobsBy(a)
	require.Len(t, points, 3, "%v", points)
	for _, c := range []string{"b", "c", "d"} {
		assert.False(t, points[c].Once, "%s: on a chain that passed, or whose last car's run is under way", c)
	}
	e := jobsBy(s.finish(points["b"].Run, chainOut(Passed, "a", "b")))["e"]
	assert.Equal(t, links("a", "b", "c", "d"), e.Ahead, "the slot b freed: e, the last car ahead of the failure")
	s.finish(points["c"].Run, chainOut(Passed, "a", "b", "c"))

	// d's chain fails twice in its run on top of c's, which passed: d's
	// own (host.failure_depth 0: no car behind is waited for). e's run is
	// stopped, and f is checked again without d.
	o := chainOut(Failed, "a", "b", "c", "d")
	o.Tries = 2
	a = s.finish(points["d"].Run, o)
	assert.Contains(t, a.Say, "CI d FAIL m-abcd make test: FAIL", "seen twice on its chain: d's own")
	assert.Contains(t, a.Cancel, e.Run)
	assert.Equal(t, links("a", "b", "c", "e"), jobsBy(a)["f"].Ahead)

	// The same, where the second run passes: a flake, nobody's.
	s = newHarness(t, func(c *Config) {
		c.MaxParallel, c.Batch, c.Retries = 1, 6, 1
		c.Components = []string{"a", "b", "c"}
	})
	s.h.Target(s.now, "T")
	for _, c := range []string{"a", "b", "c"} {
		s.checked(c, "old")
	}
	first = s.started(s.approved("a"))
	s.approved("b")
	s.approved("c")
	o = chainOut(Failed, "a")
	o.Tries = 2
	a = s.finish(first.Run, o)
	assert.Contains(t, a.Say, "CI a FAIL m-a make test: FAIL", "the front car ran its retry itself")
	c := s.started(a)
	require.Equal(t, "c", c.Component)
	assert.True(t, c.Once, "the last car of a batch: its failure is bisected, not retried")
	b := s.started(s.finish(c.Run, chainOut(Failed, "b", "c")))
	assert.Equal(t, "b", b.Component)
	a = s.finish(b.Run, chainOut(Passed, "b"))
	land, again := jobsBy(a)["b"], jobsBy(a)["c"]
	assert.Equal(t, Land, land.Kind, "b lands")
	require.Equal(t, Car, again.Kind, "c's failure on top of b's pass, seen once: checked again")
	assert.True(t, again.Once)
	a = s.finish(again.Run, chainOut(Passed, "b", "c"))
	assert.NotContains(t, strings.Join(a.Say, "\n"), "FAIL")
	land = s.started(s.finish(land.Run, Outcome{Result: Landed, Commit: "m-b"}))
	assert.Equal(t, []string{"land", "c"}, []string{land.Kind.String(), land.Component}, "c lands: a flake, nobody's")
}

// A car whose approved commit is on record as landed (a landing cut short
// before MERGED) is no batch's: a pass of a chain behind it does not vouch
// for it, so it is not left waiting for one; its own job finds it on the
// target. (hostsim seed 7984 stalled here: a's run could not start for a
// locked repository while b's chain, holding a, passed; a was never
// checked again.)
func TestACarLandedBeforeIsCheckedWhateverPassedBehindIt(t *testing.T) {
	s := batchHarness(t, 2, 4, 0)
	s.checked("a", "T")
	s.checked("b", "T")
	land := s.landing(s.approved("a"))
	s.finish(land.Run, Outcome{Result: Landed, Commit: "m-a"}) // MERGED a said to a room the stopping host has left
	next := s.restarted("m-a")
	next.h.Joined(next.now)
	car := next.started(next.foreman("STATUS a review owner=@ba pr=b/a approved=yes"))
	require.Equal(t, "a", car.Component)
	b := next.started(next.foreman("STATUS b review owner=@bb pr=b/b approved=yes"))
	require.Equal(t, "b", b.Component)
	require.Equal(t, "a", b.Ahead[0].Component, "as if a's run will pass")
	next.finish(b.Run, chainOut(Passed, "a", "b"))
	a := next.finish(car.Run, Outcome{Result: Retry, Line: "the repository is locked by another git process"})
	assert.Empty(t, queued(a), "after the wait")
	again := next.started(next.tick(time.Minute))
	assert.Equal(t, "a", again.Component, "b's pass does not vouch for a")
	a = next.finish(again.Run, Outcome{Result: Landed, Already: true, Commit: "m-a", Base: "m-a", Tip: "t-a"})
	assert.Contains(t, a.Say, "MERGED a")
}

// host.batch.min: fewer approved components than that at the train's end
// (and fewer READYs to check together) wait for more, until the oldest of
// them waited host.batch.wait; the board says so, and the host wakes then.
func TestABatchWaitsForItsMinimum(t *testing.T) {
	s := newHarness(t, func(c *Config) {
		c.MaxParallel, c.Batch, c.BatchMin, c.BatchWait = 2, 4, 3, time.Minute
		c.Components = []string{"a", "b", "c", "d"}
	})
	s.h.Target(s.now, "T")
	for _, c := range []string{"a", "b", "c", "d"} {
		s.built(c, "@b"+c)
	}
	assert.Empty(t, queued(s.hear("@ba", "READY a b/a")), "one READY: waits for more")
	assert.Contains(t, s.h.Queue().Waiting[0].Why, "waiting for more READYs to be checked with it (host.batch.min 3)")
	at, ok := s.h.NextWake()
	require.True(t, ok)
	assert.Equal(t, s.now.Add(time.Minute), at, "the host wakes when the wait is up")
	assert.Empty(t, queued(s.hear("@bb", "READY b b/b")))
	shared := s.started(s.hear("@bc", "READY c b/c"))
	assert.Equal(t, []string{"a", "b"}, []string{shared.Ahead[0].Component, shared.Ahead[1].Component}, "three READYs: one shared check")
	// Checked on an older target: their cars are checked again.
	o := chainOut(Passed, "a", "b", "c")
	o.Base = "old"
	for i, n := range []string{"a", "b", "c"} {
		o.Chain[i].Tip = "t-" + n
	}
	s.finish(shared.Run, o)
	assert.Empty(t, queued(s.hear("@bd", "READY d b/d")))
	d := s.started(s.tick(time.Minute))
	assert.Equal(t, "d", d.Component, "the minute is up: checked alone")
	s.finish(d.Run, Outcome{Result: Passed, Commit: "m-d", Tip: "t-d", Base: "old", Tree: "tr-d"})

	// The train: a and b wait for a third car.
	assert.Empty(t, queued(s.approved("a")))
	assert.Empty(t, queued(s.approved("b")))
	train := s.h.Queue().Train
	require.Len(t, train, 2)
	assert.Contains(t, train[0].Why, "waiting for more approved components to be checked with it (host.batch.min 3)")
	car := s.started(s.approved("c"))
	assert.Equal(t, "c", car.Component)
	assert.Equal(t, []string{"a", "b"}, []string{car.Ahead[0].Component, car.Ahead[1].Component}, "one run for the three")

	// d alone behind them waits its minute, then goes.
	assert.Empty(t, queued(s.approved("d")))
	d = s.started(s.tick(time.Minute))
	assert.Equal(t, "d", d.Component)
	assert.Len(t, d.Ahead, 3, "as if the three will pass")
}

// A chain whose tree's run the host no longer holds (the oldest trees are
// forgotten) lands nothing on it: its chain is checked again, and its car
// stays on the train.
func TestAPassNoLongerOnRecordIsCheckedAgain(t *testing.T) {
	s := batchHarness(t, 2, 1, 0)
	s.checked("a", "old")
	s.checked("b", "old")
	first := s.started(s.approved("a"))
	second := s.started(s.approved("b"))
	land := s.started(s.finish(first.Run, chainOut(Passed, "a")))
	require.Equal(t, Land, land.Kind)
	s.finish(second.Run, chainOut(Passed, "a", "b"))
	delete(s.h.trees.vals, "tr-ab") // forgotten while a lands
	a := s.finish(land.Run, Outcome{Result: Landed, Commit: "m-a"})
	assert.NotContains(t, strings.Join(a.Say, "\n"), "not landing")
	again := s.started(a)
	assert.Equal(t, []string{"car", "b"}, []string{again.Kind.String(), again.Component}, "checked again")
	assert.Len(t, s.h.Queue().Train, 1)
}
