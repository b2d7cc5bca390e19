package host

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func trainHarness(t *testing.T, parallel int) *harness {
	s := newHarness(t, func(c *Config) {
		c.MaxParallel = parallel
		c.Components = []string{"a", "b", "c", "d", "e", "f", "z"}
	})
	s.h.Target(s.now, "T")
	return s
}

// landed lands z first: the cars approved next, checked before review on
// an older target, are checked again in the train.
func (s *harness) landed() {
	s.t.Helper()
	land := s.landing(s.approve("z", "T"))
	s.finish(land.Run, Outcome{Result: Landed, Commit: "T2"})
}

// approve takes c through its check before review (passed on base), its
// review and its approval, and returns what the approval started.
func (s *harness) approve(c, base string) Actions {
	s.t.Helper()
	s.checked(c, base)
	return s.approved(c)
}

// checked takes c through its check before review, passed on base.
func (s *harness) checked(c, base string) {
	s.t.Helper()
	b, ref := "@b"+c, "b/"+c
	s.built(c, b)
	j := s.started(s.hear(b, "READY "+c+" "+ref))
	s.finish(j.Run, Outcome{Result: Passed, Commit: "m-" + c, Tip: "t-" + c, Base: base, Tree: "tr-" + c})
}

// approved takes checked c through review and approval.
func (s *harness) approved(c string) Actions {
	b, ref := "@b"+c, "b/"+c
	s.foreman("REVIEW " + c + " " + b + " " + ref)
	s.hear("@aud", "AUDIT "+c+" PASS")
	return s.foreman("STATUS " + c + " review owner=" + b + " pr=" + ref + " approved=yes")
}

// threeCars lands z, then approves a, b and c, each checked before review
// on an older target, so the three are cars of the train; it returns
// each car's run.
func (s *harness) threeCars() map[string]int {
	s.t.Helper()
	s.landed()
	runs := map[string]int{}
	for _, c := range []string{"a", "b", "c"} {
		s.approve(c, "old")
	}
	for _, j := range s.h.Queue().Running {
		runs[j.Component] = j.Run
	}
	require.Len(s.t, runs, 3)
	return runs
}

func links(names ...string) []Link {
	var l []Link
	for _, n := range names {
		l = append(l, Link{Component: n, Tip: "t-" + n, Ref: "b/" + n, Owner: "@b" + n})
	}
	return l
}

// jobsBy indexes the jobs a step started by component.
func jobsBy(a Actions) map[string]Job {
	m := map[string]Job{}
	for _, j := range queued(a) {
		m[j.Component] = j
	}
	return m
}

// A train of six: every car is checked at once on the chain it lands on;
// the front lands as soon as it passed; a car that fails with every car
// ahead of it passed steps back, and the cars behind it are checked again
// without it, while the cars ahead are untouched.
func TestTrainOfSixWithOneSalvaged(t *testing.T) {
	s := trainHarness(t, 6)
	land := s.landing(s.approve("a", "T"))
	assert.Equal(t, Job{Run: land.Run, Kind: Land, Component: "a", Ref: "b/a", Owner: "@ba", Base: "T", Tip: "t-a", Commit: "m-a", Tree: "tr-a"}, land)
	cars := map[string]Job{}
	for i, c := range []string{"b", "c", "d", "e", "f"} {
		j := s.started(s.approve(c, "T"))
		assert.Equal(t, Car, j.Kind)
		assert.Equal(t, "T", j.Base)
		assert.Equal(t, links([]string{"a", "b", "c", "d", "e"}[:i+1]...), j.Ahead, c)
		cars[c] = j
	}
	assert.Len(t, s.h.Queue().Running, 6, "five cars and a landing: a landing takes no slot")

	a := s.finish(land.Run, Outcome{Result: Landed, Commit: "m-a"})
	assert.Equal(t, []string{"queue: a landed on main at m-a; receipt: git notes --ref foreman show m-a", "MERGED a"}, a.Say)

	a = s.finish(cars["c"].Run, Outcome{Result: Failed, Commit: "m-abc", Line: "make test: FAIL"})
	assert.Empty(t, a.Say, "c's failure may be b's: it waits for b")
	assert.Equal(t, "failed", s.h.Queue().Train[1].State)

	a = s.finish(cars["b"].Run, Outcome{Result: Passed, Commit: "m-ab", Tree: "tr-ab", Base: "T"})
	assert.Equal(t, []string{"CI c FAIL m-abc make test: FAIL"}, a.Say, "b passed: c's failure is its own")
	assert.ElementsMatch(t, []int{cars["d"].Run, cars["e"].Run, cars["f"].Run}, a.Cancel, "the cars behind c were checked with it")
	started := jobsBy(a)
	require.Len(t, started, 4)
	assert.Equal(t, Job{Run: started["b"].Run, Kind: Land, Component: "b", Ref: "b/b", Owner: "@bb", Base: "m-a", Tip: "t-b", Commit: "m-ab", Tree: "tr-ab"}, started["b"])
	assert.Equal(t, links("a", "b"), started["d"].Ahead)
	assert.Equal(t, links("a", "b", "d"), started["e"].Ahead)
	assert.Equal(t, links("a", "b", "d", "e"), started["f"].Ahead)

	// A stale result is dropped.
	assert.Empty(t, s.finish(cars["d"].Run, Outcome{Result: Failed, Line: "stale"}).Say)

	s.foreman("FIX c @bc 1/5 CI failed: ...")
	for _, c := range []string{"f", "e", "d"} {
		assert.Empty(t, s.finish(started[c].Run, Outcome{Result: Passed, Commit: "m-" + c + "2"}).Say, "waits for the cars ahead")
	}
	a = s.finish(started["b"].Run, Outcome{Result: Landed, Commit: "m-ab"})
	assert.Equal(t, []string{"queue: b landed on main at m-ab; receipt: git notes --ref foreman show m-ab", "MERGED b"}, a.Say)
	next := s.started(a)
	assert.Equal(t, Job{Run: next.Run, Kind: Land, Component: "d", Ref: "b/d", Owner: "@bd", Base: "m-ab", Tip: "t-d", Commit: "m-d2", Tree: "tr-m-d2"}, next)
	next = s.started(s.finish(next.Run, Outcome{Result: Landed, Commit: "m-d2"}))
	assert.Equal(t, "e", next.Component)
	assert.Equal(t, "m-d2", next.Base)
	next = s.started(s.finish(next.Run, Outcome{Result: Landed, Commit: "m-e2"}))
	a = s.finish(next.Run, Outcome{Result: Landed, Commit: "m-f2"})
	assert.Contains(t, a.Say, "MERGED f")
	assert.Empty(t, s.h.Queue().Train)
	assert.Empty(t, s.h.Queue().Running)
}

// Two components that pass alone and fail together: the later one steps
// back, the earlier lands.
func TestSemanticConflictStepsBackTheLaterOne(t *testing.T) {
	s := trainHarness(t, 4)
	land := s.landing(s.approve("a", "T"))
	car := s.started(s.approve("b", "T"))
	a := s.finish(car.Run, Outcome{Result: Failed, Commit: "m-ab", Line: "go test: --- FAIL: TestTogether"})
	assert.Equal(t, []string{"CI b FAIL m-ab go test: --- FAIL: TestTogether"}, a.Say,
		"a passed (its check before review, on the same base): b's failure on a's chain is b's")
	a = s.finish(land.Run, Outcome{Result: Landed, Commit: "m-a"})
	assert.Contains(t, a.Say, "MERGED a")
}

// A car ahead that fails takes the blame; the car behind, which failed
// only because of it, is checked again without it and never blamed.
func TestACarIsNotBlamedForTheCarAhead(t *testing.T) {
	s := trainHarness(t, 4)
	runs := s.threeCars()
	assert.Empty(t, s.finish(runs["c"], Outcome{Result: Failed, Line: "broken by b"}).Say)
	assert.Empty(t, s.finish(runs["b"], Outcome{Result: Failed, Line: "b is broken"}).Say, "a has not passed yet")
	a := s.finish(runs["a"], Outcome{Result: Passed, Commit: "m-a", Base: "T"})
	assert.Equal(t, []string{"CI b FAIL b is broken"}, a.Say, "b is blamed, c is not")
	started := jobsBy(a)
	assert.Equal(t, Land, started["a"].Kind)
	assert.Equal(t, Car, started["c"].Kind)
	assert.Equal(t, links("a"), started["c"].Ahead, "c again, without b")
}

// A commit that cannot land whatever the chain (gone, or moved after
// approval) steps back at once.
func TestABadCommitIsBlamedAtOnce(t *testing.T) {
	s := trainHarness(t, 4)
	s.landed()
	s.approve("a", "old")
	car := s.started(s.approve("b", "old"))
	a := s.finish(car.Run, Outcome{Result: Stale, Found: "0123456789abcdef", Tip: "t-b"})
	assert.Equal(t, []string{"CI b FAIL branch b/b moved to 0123456789ab after t-b was approved; say READY again to have it checked and reviewed"}, a.Say,
		"the job said what the branch holds; the core says what that means")
}

// A car whose chain does not merge because of a car ahead waits for that
// car's own verdict.
func TestAConflictAheadIsNotThisCarsFault(t *testing.T) {
	s := trainHarness(t, 4)
	runs := s.threeCars()
	assert.Empty(t, s.finish(runs["c"], Outcome{Result: Conflicted, Files: []string{"x.go"}, Culprit: "b"}).Say)
	s.finish(runs["a"], Outcome{Result: Passed, Commit: "m-a", Base: "T"})
	a := s.finish(runs["b"], Outcome{Result: Conflicted, Files: []string{"x.go"}})
	assert.Equal(t, []string{"CI b CONFLICT x.go"}, a.Say)
	assert.Equal(t, links("a"), jobsBy(a)["c"].Ahead)
}

// The target moved by hand: every chain is made again on it.
func TestTargetMovedByHandRebuildsTheTrain(t *testing.T) {
	s := trainHarness(t, 4)
	land := s.landing(s.approve("a", "T"))
	car := s.started(s.approve("b", "T"))
	a := s.finish(land.Run, Outcome{Result: Moved, Target: "X0123456789abcdef"})
	assert.Equal(t, []string{"queue: main moved outside the queue (to X0123456789a); the train is checked again on it"}, a.Say)
	assert.Equal(t, []int{car.Run}, a.Cancel)
	started := jobsBy(a)
	require.Len(t, started, 2)
	assert.Equal(t, Job{Run: started["a"].Run, Kind: Car, Component: "a", Ref: "b/a", Owner: "@ba", Base: "X0123456789abcdef", Tip: "t-a",
		Target: "X0123456789abcdef", Pass: &Pass{Component: "a", Owner: "@ba", Ref: "b/a", Tip: "t-a", Commit: "m-a", Base: "T", Tree: "tr-a"}}, started["a"])
	assert.Equal(t, links("a"), started["b"].Ahead)
	assert.Equal(t, "X0123456789abcdef", started["b"].Base)
}

// A component released (or reassigned) while in the train leaves it; the
// cars behind it are checked again without it.
func TestLeavingTheTrain(t *testing.T) {
	s := trainHarness(t, 4)
	runs := s.threeCars()
	a := s.foreman("OK RELEASE b")
	assert.ElementsMatch(t, []int{runs["b"], runs["c"]}, a.Cancel)
	assert.Equal(t, links("a"), s.started(a).Ahead)
	assert.Len(t, s.h.Queue().Train, 2)
}

// A landing under way is not cancelled: its compare-and-swap may be done,
// and what it did is said.
func TestALandingUnderWayIsNeverCancelled(t *testing.T) {
	s := trainHarness(t, 4)
	land := s.landing(s.approve("a", "T"))
	a := s.foreman("OK RELEASE a")
	assert.Empty(t, a.Cancel)
	a = s.finish(land.Run, Outcome{Result: Landed, Commit: "m-a"})
	assert.Equal(t, []string{"queue: a landed on main at m-a; receipt: git notes --ref foreman show m-a", "MERGED a"}, a.Say, "it is on the target: foreman must hear it")
}

// A check that failed then passed on the same tree is flaky: it does not
// step anyone back, the verdict says so, and the queue counts it.
func TestFlakyChecksAreCountedNotBlamed(t *testing.T) {
	s := trainHarness(t, 2)
	s.built("a", "@ba")
	j := s.started(s.hear("@ba", "READY a b/a"))
	a := s.finish(j.Run, Outcome{Result: Passed, Commit: "m-a", Flaky: []string{"make test"}})
	assert.Equal(t, []string{"CI a PASS m-a (flaky: make test failed, then passed on the same tree)"}, a.Say)
	assert.Equal(t, map[string]int{"make test": 1}, s.h.Queue().Flaky)
}

// The queue shows the train: each car, what it is checked on, its state
// and when it should land.
func TestTheTrainIsVisible(t *testing.T) {
	s := trainHarness(t, 2)
	s.landed()
	for _, c := range []string{"a", "b", "c"} {
		s.checked(c, "old")
	}
	for _, c := range []string{"a", "b", "c"} {
		s.approved(c)
	}
	s.now = s.now.Add(30 * time.Second)
	q := s.h.Queue()
	require.Len(t, q.Train, 3)
	assert.Equal(t, "main", q.Train[0].On)
	assert.Equal(t, "main+a+b", q.Train[2].On)
	assert.Equal(t, []string{"checking", "checking", "waiting"}, []string{q.Train[0].State, q.Train[1].State, q.Train[2].State})
	assert.False(t, q.Train[2].ETA.Before(q.Train[1].ETA), "a car lands after the cars ahead")
	line := s.hear("@op", "STATUS c").Say
	require.Len(t, line, 1)
	assert.Contains(t, line[0], "queue: c in the train, 3 of 3, waiting on main+a+b; expected to land in")
	sum := s.hear("@op", "STATUS").Say
	require.Len(t, sum, 1)
	assert.Contains(t, sum[0], "train of 3 on main: a checking")
}

// A car the repository could not check now is tried again after a wait.
func TestACarIsRetriedLater(t *testing.T) {
	s := newHarness(t, func(c *Config) {
		c.Backoff = 10 * time.Second
		c.MaxParallel = 2
		c.Components = []string{"a", "b", "z"}
	})
	s.h.Target(s.now, "T")
	s.landed()
	s.approve("a", "old")
	car := s.started(s.approve("b", "old"))
	a := s.finish(car.Run, Outcome{Result: Retry, Line: "the repository is locked"})
	assert.Equal(t, []string{"queue: cannot check b in the train yet: the repository is locked; trying again in 10s"}, a.Say)
	assert.Empty(t, a.Start)
	wake, ok := s.h.NextWake()
	require.True(t, ok)
	assert.Equal(t, s.now.Add(10*time.Second), wake)
	assert.Equal(t, "b", s.started(s.tick(10*time.Second)).Component)
}

// A landing cut short by a crash: the car finds its commit on the target
// already, and MERGED is said once.
func TestACarAlreadyLanded(t *testing.T) {
	s := newHarness(t, func(c *Config) { c.MaxParallel = 4; c.Components = []string{"a", "b"} })
	car := s.started(s.approve("a", ""))
	assert.Equal(t, Job{Run: car.Run, Kind: Car, Component: "a", Ref: "b/a", Owner: "@ba", Tip: "t-a",
		Pass: &Pass{Component: "a", Owner: "@ba", Ref: "b/a", Tip: "t-a", Commit: "m-a", Tree: "tr-a"}}, car,
		"no base known: the job finds the target")
	a := s.finish(car.Run, Outcome{Result: Landed, Already: true, Commit: "T", Base: "T"})
	assert.Equal(t, []string{"queue: a was already on main at T", "MERGED a"}, a.Say)
	assert.Empty(t, s.h.Queue().Train)
	land := s.landing(s.approve("b", "T"))
	assert.Equal(t, "T", land.Base, "the target the job found")
}

// A branch force-pushed after approval, found at landing: it steps back,
// and the cars behind it are checked again without it.
func TestABranchMovedAfterApprovalIsNotLanded(t *testing.T) {
	s := trainHarness(t, 4)
	land := s.landing(s.approve("a", "T"))
	car := s.started(s.approve("b", "T"))
	s.started(s.approve("c", "T"))
	a := s.finish(land.Run, Outcome{Result: Stale, Culprit: "a", Found: ""})
	assert.Equal(t, []string{"CI a FAIL branch b/a was deleted after t-a was approved; say READY again to have it checked and reviewed"}, a.Say)
	assert.Contains(t, a.Cancel, car.Run)
	b := jobsBy(a)["b"]
	assert.Equal(t, Job{Run: b.Run, Kind: Car, Component: "b", Ref: "b/b", Owner: "@bb", Base: "T", Tip: "t-b", Target: "T",
		Pass: &Pass{Component: "b", Owner: "@bb", Ref: "b/b", Tip: "t-b", Commit: "m-b", Base: "T", Tree: "tr-b"}}, b,
		"b, now first, is made again on the target as it is: the tree its check before review passed")
	assert.Equal(t, links("b"), jobsBy(a)["c"].Ahead)
	land = s.started(s.finish(b.Run, Outcome{Result: Passed, Reused: true, Commit: "m-b", Tip: "t-b", Base: "T", Tree: "tr-b"}))
	assert.Equal(t, Job{Run: land.Run, Kind: Land, Component: "b", Ref: "b/b", Owner: "@bb", Base: "T", Tip: "t-b", Commit: "m-b", Tree: "tr-b"}, land)
}

// The queue counts the runs of the checks and the landings: a car whose
// chain is the tree its check before review passed is no run.
func TestChecksPerLandingAreCounted(t *testing.T) {
	s := trainHarness(t, 2)
	land := s.landing(s.approve("a", "T")) // one run: a's check before review; its car reused it
	s.finish(land.Run, Outcome{Result: Landed, Commit: "T2"})
	q := s.h.Queue()
	assert.Equal(t, 1, q.CheckRuns)
	assert.Equal(t, 1, q.LandedN)
	car := s.started(s.approve("b", "T")) // checked on T, lands on T2: its car runs
	s.finish(car.Run, Outcome{Result: Passed, Commit: "m2-b", Tip: "t-b", Base: "T2", Tree: "tr2-b"})
	q = s.h.Queue()
	assert.Equal(t, 3, q.CheckRuns)
}
