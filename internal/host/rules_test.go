package host

import (
	"testing"

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
