package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAuditorFailsWhatIsScriptedThenPasses(t *testing.T) {
	w := newWorld(t, "@aud")
	a := newAuditor(Auditor{Delay: 2 * time.Minute, Fail: map[string][]string{"cart": {"no discounts", "still none"}}})
	var verdicts [][]string
	for range 3 {
		w.hear(a, "REVIEW cart @b1 pr/1")
		w.hear(a, "REVIEW db @b2 pr/2")
		assert.Empty(t, w.said, "it reads the PR first")
		w.advance(3 * time.Minute)
		verdicts = append(verdicts, w.take())
	}
	assert.ElementsMatch(t, []string{"AUDIT cart FAIL no discounts", "AUDIT db PASS"}, verdicts[0])
	assert.ElementsMatch(t, []string{"AUDIT cart FAIL still none", "AUDIT db PASS"}, verdicts[1])
	assert.ElementsMatch(t, []string{"AUDIT cart PASS", "AUDIT db PASS"}, verdicts[2])
}

func TestCIBotRunsOnReady(t *testing.T) {
	w := newWorld(t, "@ci")
	c := newCI(CI{Delay: time.Minute, Fail: map[string][]string{"web": {"lint"}}})
	c.agent(w, "@b1", "READY web b1/web")
	c.agent(w, "@b1", "PROGRESS web 50")
	c.agent(w, "@b2", "**ready** db b2/db")
	w.advance(2 * time.Minute)
	assert.ElementsMatch(t, []string{"CI web FAIL lint", "CI db PASS"}, w.take())
	c.agent(w, "@b1", "READY web b1/web")
	w.advance(2 * time.Minute)
	assert.Equal(t, []string{"CI web PASS"}, w.take())
}

func TestOperatorSettlesHoldsAndLetsTheRestBe(t *testing.T) {
	w := newWorld(t, "@op")
	o := newOperator(Operator{Delay: 3 * time.Minute, Notes: map[string]string{"hard-blocker": "spec clarified"}})
	for _, l := range []string{
		"ESCALATE payments hard-blocker invalid_specification: x (from @b, who let payments go); decide, then RESOLVE payments",
		"ESCALATE bookshop overtime the build has run 2h",
		"ESCALATE db audit-overdue no verdict 5m after REVIEW",
		"ESCALATE db claim-dispute @x sent 3 builder lines",
		"ESCALATE bookshop cycle a -> b -> a; the build is halted",
		"TASKS db",
	} {
		w.hear(o, l)
	}
	assert.Empty(t, w.take(), "a human takes a moment")
	w.advance(4 * time.Minute)
	assert.Equal(t, []string{"RESOLVE payments spec clarified"}, w.take())

	w.hear(o, "ESCALATE docs need-info @b3 needs styleguide, which is not a component of the build (the decomposition missed it); ADD styleguide then RESOLVE docs")
	w.hear(o, "ESCALATE cart audit-exhausted @b1, @b2 each failed 2/2 audits")
	w.hear(o, "ESCALATE api cycle BLOCKED api web would close a dependency cycle")
	w.advance(4 * time.Minute)
	assert.Equal(t, []string{"ADD styleguide", "DEPEND docs styleguide", "RESOLVE docs decided",
		"RESOLVE cart decided", "RESOLVE api decided"}, w.take())
}

// A CI bot that comes late owes the READYs in the room's history, but not
// one foreman answered since with a TASKS naming the component: it is back
// to be claimed, not in CI. (Why TestLateCIAnswersTheReadyNobodyChecked
// must have TASKS in the room before the READYs.)
func TestLateCIBotOwesNoReadyATASKSAnswered(t *testing.T) {
	w := newWorld(t, "@ci")
	c := newCI(CI{Delay: time.Minute})
	c.catchUpAgent("@b1", "READY api b1/api")
	c.catchUpAgent("@b1", "READY web b1/web")
	tasks, ok := parseReply("TASKS api db")
	require.True(t, ok)
	c.catchUp(tasks)
	c.start(w)
	w.advance(2 * time.Minute)
	assert.Equal(t, []string{"CI web PASS"}, w.take())
}
