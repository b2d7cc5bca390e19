package host

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/host/receipt"
)

// A pass counts only if its report shows every configured check passing,
// in order: an executor that says "passed" of a run where a check failed,
// or did not run, is not believed, before review or in the train.
func TestAPassCountsOnlyWithEveryCheckPassed(t *testing.T) {
	checks := []string{"make lint", "make test"}
	for name, ev := range map[string]*receipt.Checks{
		"a check failed":   {Commands: []receipt.Command{{Command: "make lint", Result: "passed"}, {Command: "make test", Result: "failed"}}},
		"a check not run":  {Commands: []receipt.Command{{Command: "make lint", Result: "passed"}}},
		"another check":    {Commands: []receipt.Command{{Command: "make lint", Result: "passed"}, {Command: "true", Result: "passed"}}},
		"out of order":     {Commands: []receipt.Command{{Command: "make test", Result: "passed"}, {Command: "make lint", Result: "passed"}}},
		"no report at all": nil,
	} {
		t.Run(name, func(t *testing.T) {
			s := trainHarness(t, 2)
			s.h.cfg.Checks = checks
			s.built("a", "@ba")
			j := s.started(s.hear("@ba", "READY a b/a"))
			o := Outcome{Result: Passed, Commit: "m-a", Tip: "t-a", Base: "T", Tree: "tr-a", Checks: ev}
			a := s.h.Finished(s.now, withRun(o, j.Run)) // as reported: the harness's finish would fill a nil report
			require.NotEmpty(t, a.Say)
			for _, l := range a.Say {
				assert.NotContains(t, l, "CI a PASS")
			}
			assert.Contains(t, a.Say[0], "queue: cannot check a yet: the report of its checks does not hold: ")
			_, ok := s.h.trees.get("tr-a")
			assert.False(t, ok, "not on record as passed")

			// In the train: a car reported passed on such a report does
			// not land.
			s = trainHarness(t, 2)
			s.checked("a", "T")
			s.h.cfg.Checks = checks
			car := s.started(s.approved("a"))
			o = Outcome{Result: Passed, Commit: "m-a2", Tip: "t-a", Base: "T", Tree: "tr-a2", Checks: ev}
			a = s.h.Finished(s.now, withRun(o, car.Run))
			_, landing := startedOf(a, Land)
			assert.False(t, landing, "nothing lands on a pass whose report does not hold")
			assert.Contains(t, a.Say[0], "queue: cannot check a in the train yet: the report of its checks does not hold")
		})
	}
}

func withRun(o Outcome, run int) Outcome {
	o.Run = run
	return o
}

// refuseAll are rules that let nothing pass and nothing land.
type refuseAll struct{}

func (refuseAll) Passed([]string, *receipt.Checks) string { return "these rules refuse everything" }
func (refuseAll) MayLand(Landable) string                 { return "these rules refuse everything" }

// The rules are the core's: swapped for rules that refuse everything, a
// pass reported by the executor is not counted, and nothing lands. (The
// same with real git and real workers: live's TestNothingLandsThatTheRulesRefuse.)
func TestRulesThatRefuseEverythingLandNothing(t *testing.T) {
	s := trainHarness(t, 2)
	s.checked("a", "T")
	s.h.cfg.Rules = refuseAll{}
	car := s.started(s.approved("a"))
	a := s.finish(car.Run, Outcome{Result: Passed, Commit: "m-a", Tip: "t-a", Base: "T", Tree: "tr-a", Reused: true})
	_, landing := startedOf(a, Land)
	assert.False(t, landing)
	require.NotEmpty(t, a.Say)
	assert.Contains(t, a.Say[0], "these rules refuse everything")
}

// An approval is the builder's: a component given to another builder on
// the same branch is approved anew, never at the commit the first
// builder's approval fixed.
func TestAnotherBuildersApprovalOnTheSameBranchIsItsOwn(t *testing.T) {
	s := newHarness(t, func(c *Config) { c.Gating = false; c.Components = []string{"a"} })
	s.h.Target(s.now, "T")
	s.built("a", "@b1")
	s.foreman("REVIEW a @b1 b/a")
	car := s.started(s.foreman("STATUS a review owner=@b1 pr=b/a approved=yes approved_by=@aud"))
	a := s.finish(car.Run, Outcome{Result: Passed, Commit: "m-a", Tip: "t-1", Base: "T"})
	land := s.started(a)
	require.Equal(t, Land, land.Kind)
	assert.Equal(t, "t-1", s.h.approvals["a"].Tip)
	// b1 force-pushes before the landing: it steps back.
	s.finish(land.Run, Outcome{Result: Stale, Culprit: "a", Found: "t-x"})

	// Given to b2, on the same branch, and approved again.
	s.foreman("ACK a @b2")
	s.foreman("REVIEW a @b2 b/a")
	car = s.started(s.foreman("STATUS a review owner=@b2 pr=b/a approved=yes approved_by=@aud"))
	assert.Equal(t, Car, car.Kind)
	assert.Empty(t, car.Tip, "b2's approval is of what the branch holds now, found by its car, never b1's t-1")
	assert.Equal(t, "@b2", s.h.approvals["a"].Owner)
}

// A full batch just in front of a car whose run is under way is checked
// again after its run could not be done: the run under way does not
// stand in for it (batches' boundary: e-s >= batch.max).
func TestAFullBatchBeforeARunUnderWayIsTriedAgain(t *testing.T) {
	s := batchHarness(t, 3, 2, 0)
	for _, c := range []string{"a", "b", "c"} {
		s.checked(c, "old")
	}
	var runs []Job
	for _, c := range []string{"a", "b", "c"} {
		runs = append(runs, queued(s.approved(c))...)
	}
	byC := map[string]Job{}
	for _, j := range runs {
		byC[j.Component] = j
	}
	require.Contains(t, byC, "b", "a and b, a batch: b's chain checked")
	require.Contains(t, byC, "c", "c's chain, behind it")
	s.finish(byC["a"].Run, Outcome{Result: Retry, Line: "the repository is locked"})
	s.finish(byC["b"].Run, Outcome{Result: Retry, Line: "the repository is locked"})
	again := jobsBy(s.tick(time.Hour))
	require.Contains(t, again, "b", "b's batch tried again while c's run is under way")
	assert.Equal(t, links("a"), again["b"].Ahead)
}

// The strict rules' words, which the host says.
func TestTheStrictRulesSayWhy(t *testing.T) {
	r := StrictRules{}
	assert.Equal(t, "it says make test (no result)", r.Passed([]string{"make test"}, &receipt.Checks{Commands: []receipt.Command{{Command: "make test"}}}))
	assert.Equal(t, "it names make test passed, and the checks are none", r.Passed(nil, &receipt.Checks{Commands: []receipt.Command{{Command: "make test", Result: "passed"}}}))
	assert.Equal(t, "it names none passed, and the checks are make lint, make test", r.Passed([]string{"make lint", "make test"}, &receipt.Checks{}))
	assert.Equal(t, "", r.Passed(nil, &receipt.Checks{}), "no check configured: a clean merge passes")
}

// May it land: only the approved commit of the builder and ref approved,
// once.
func TestTheStrictRulesOnLanding(t *testing.T) {
	r := StrictRules{}
	a := &Approval{Component: "a", Owner: "@b1", Ref: "b/a", Approval: receipt.Approval{Tip: "t-1"}}
	l := Landable{Component: "a", Owner: "@b1", Ref: "b/a", Tip: "t-1", Approval: a, Target: "main"}
	assert.Empty(t, r.MayLand(l))
	for want, change := range map[string]func(*Landable){
		"no approval of @b1's b/a is on record":   func(l *Landable) { l.Approval = nil },
		"no approval of @b2's b/a is on record":   func(l *Landable) { l.Owner = "@b2" },
		"no approval of @b1's b/x is on record":   func(l *Landable) { l.Ref = "b/x" },
		"its car holds t-2, and t-1 was approved": func(l *Landable) { l.Tip = "t-2" },
		"its car holds , and  was approved": func(l *Landable) {
			l.Tip = ""
			l.Approval = &Approval{Component: "a", Owner: "@b1", Ref: "b/a"}
		},
		"t-1 landed before, at m-1, and main no longer holds it: it does not land twice (MERGED a or RELEASE a decides)": func(l *Landable) { l.LandedAt = "m-1" },
	} {
		c := l
		change(&c)
		assert.Equal(t, want, r.MayLand(c))
	}
}

// A receipt that cannot be signed holds the landing back, said once, tried
// again after a wait that doubles.
func TestALandingWhoseReceiptCannotBeSignedWaits(t *testing.T) {
	s := trainHarness(t, 2)
	fail := true
	sign := s.h.cfg.Sign
	s.h.cfg.Sign = func(st receipt.Signed) ([]byte, error) {
		if fail {
			return nil, errors.New("the key is locked")
		}
		return sign(st)
	}
	s.checked("a", "T")
	car := s.started(s.approved("a"))
	a := s.finish(car.Run, Outcome{Result: Passed, Reused: true, Commit: "m-a", Tip: "t-a", Base: "T", Tree: "tr-a"})
	_, landing := startedOf(a, Land)
	assert.False(t, landing)
	assert.Equal(t, []string{"queue: cannot land a yet: cannot sign its receipt: the key is locked; trying again in 30s"}, a.Say)
	a = s.tick(30 * time.Second)
	assert.Empty(t, a.Say, "said once")
	_, landing = startedOf(a, Land)
	assert.False(t, landing)
	fail = false
	_, landing = startedOf(s.tick(time.Minute), Land)
	assert.True(t, landing, "after the wait, signed")
}

// A landing the last check before the compare-and-swap refused lands
// nothing: said, its receipts voided, its cars checked again after a wait.
func TestARefusedLandingIsCheckedAgain(t *testing.T) {
	s := trainHarness(t, 2)
	land := s.signedLanding(s.approve("a", "T"))
	a := s.finish(land.Run, Outcome{Result: Refused, Culprit: "a", Line: "a's commit m-a is not made on T"})
	assert.Contains(t, a.Records, Record{Op: OpVoid, Commit: "m-a"})
	assert.Equal(t, []string{"queue: not landing a: the check before the compare-and-swap refused it: a's commit m-a is not made on T; checked again"}, a.Say)
	assert.Empty(t, queued(a), "after a wait")
	again := jobsBy(s.tick(time.Hour))
	assert.Equal(t, Car, again["a"].Kind, "checked again")
	assert.Equal(t, 0, s.h.chain.Seq, "nothing landed")
}

// With host.branch_namespaces, a builder's branches are its own name's:
// b1/api for @b1. Anything else is not in it: another's, the target, a
// prefix of its name, the bare name.
func TestABranchIsInItsBuildersNamespace(t *testing.T) {
	for _, in := range []string{"b1/api", "refs/heads/b1/api", "b1/api/v2"} {
		assert.True(t, InNamespace("@b1", in), in)
	}
	for _, out := range []string{"b2/api", "main", "b1", "b1/", "b10/api", "b/api", "refs/heads/b2/api", "refs/tags/b1/api", "x/b1/api"} {
		assert.False(t, InNamespace("@b1", out), out)
	}
	assert.False(t, InNamespace("@", "/api"), "no name, no namespace")
}

// A READY naming a branch outside its builder's namespace is refused with
// the reason and what to do, and nothing is checked; foreman's FIX steps
// it back, and a READY of its own namespace is checked. Off (the
// default), the same READY is checked: the rule is the refusal's cause.
func TestAReadyOutsideTheBuildersNamespaceIsRefused(t *testing.T) {
	s := newHarness(t, func(c *Config) { c.BranchNamespaces = true })
	s.built("api", "@b1")
	a := s.hear("@b1", "READY api b2/api")
	assert.Empty(t, queued(a), "nothing of another's branch is checked")
	assert.Equal(t, []string{"CI api FAIL the branch b2/api is outside @b1's namespace (host.branch_namespaces): a builder's branches are b1/<name>; push the work to b1/<component> and READY that"}, a.Say)
	s.foreman("FIX api @b1 1/5 CI failed: the branch b2/api is outside")
	j := s.started(s.hear("@b1", "READY api b1/api"))
	assert.Equal(t, "b1/api", j.Ref)

	off := newHarness(t, nil)
	off.built("api", "@b1")
	j = off.started(off.hear("@b1", "READY api b2/api"))
	assert.Equal(t, "b2/api", j.Ref, "without namespaces any branch is checked")
}

// A car from outside its builder's namespace does not land, even approved
// (a host whose namespaces were turned on after the approval).
func TestTheStrictRulesLandOnlyFromTheNamespace(t *testing.T) {
	a := &Approval{Component: "a", Owner: "@b1", Ref: "b2/a", Approval: receipt.Approval{Tip: "t-1"}}
	l := Landable{Component: "a", Owner: "@b1", Ref: "b2/a", Tip: "t-1", Approval: a, Target: "main"}
	assert.Empty(t, StrictRules{}.MayLand(l))
	assert.Equal(t, "the branch b2/a is outside @b1's namespace (host.branch_namespaces): a builder's branches are b1/<name>; push the work to b1/<component> and READY that",
		StrictRules{Namespaces: true}.MayLand(l))
}
