package host

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func flakyHarness(t *testing.T, threshold float64) *harness {
	s := newHarness(t, func(c *Config) {
		c.MaxParallel = 2
		c.Components = []string{"a", "b", "c", "d", "e", "f", "z"}
		c.FlakyThreshold = threshold
	})
	s.h.Target(s.now, "T")
	return s
}

// learnFlakes has make test fail then pass on the same tree three times
// (host.retries): each a failure that passed again.
func (s *harness) learnFlakes(comps ...string) {
	s.t.Helper()
	for _, c := range comps {
		s.built(c, "@b"+c)
		j := s.started(s.hear("@b"+c, "READY "+c+" b/"+c))
		s.finish(j.Run, Outcome{Result: Passed, Commit: "m-" + c, Tip: "t-" + c, Base: "T", Flaky: []string{"make test"}})
	}
}

// A command whose failures passed again on the same tree more than
// host.flaky_threshold of the time is flaky: its next failure is checked
// again on the same tree before anyone is blamed, and the check that then
// passes is the verdict. The builder never hears FAIL.
func TestAFlakyCommandsFailureIsCheckedAgainNotBlamed(t *testing.T) {
	s := flakyHarness(t, 0.25)
	s.learnFlakes("a", "b", "c")
	q := s.h.Queue()
	require.Equal(t, []FlakyCommand{{Command: "make test", Failed: 3, PassedAgain: 3, Flaky: true}}, q.Commands)

	s.built("d", "@bd")
	j := s.started(s.hear("@bd", "READY d b/d"))
	a := s.finish(j.Run, Outcome{Result: Failed, Commit: "m-d", Tip: "t-d", Base: "T", Tree: "tr-d", Command: "make test", Line: "make test: FAIL: timing"})
	require.Len(t, a.Say, 1)
	assert.Equal(t, "queue: make test failed on d, and it is flaky (3 of its 4 failures passed again on the same tree): checking d again before blaming anyone (1 of 2)", a.Say[0])
	again := s.started(a)
	assert.Equal(t, "d", again.Component)
	assert.Equal(t, j.Ref, again.Ref)
	a = s.finish(again.Run, Outcome{Result: Passed, Commit: "m-d", Tip: "t-d", Base: "T", Tree: "tr-d"})
	assert.Equal(t, []string{"CI d PASS m-d"}, a.Say)
	q = s.h.Queue()
	assert.Equal(t, []FlakyCommand{{Command: "make test", Failed: 4, PassedAgain: 4, Flaky: true}}, q.Commands,
		"the failure on tr-d, then its pass: learned too")
}

// A flaky command's failure that fails every time it is checked again is
// the builder's after all: reported, once, after maxFlakeRetries tries.
func TestAFlakyCommandsFailureThatStaysIsReported(t *testing.T) {
	s := flakyHarness(t, 0.25)
	s.learnFlakes("a", "b", "c")
	s.built("d", "@bd")
	a := s.hear("@bd", "READY d b/d")
	var said []string
	for range maxFlakeRetries + 1 {
		j := s.started(a)
		a = s.finish(j.Run, Outcome{Result: Failed, Commit: "m-d", Tip: "t-d", Base: "T", Tree: "tr-d", Command: "make test", Line: "make test: FAIL: broken"})
		said = append(said, a.Say...)
	}
	require.Len(t, said, 3)
	assert.True(t, strings.HasPrefix(said[2], "CI d FAIL m-d make test: FAIL: broken"), said[2])
	assert.Empty(t, queued(a), "nothing is checked again")
}

// A flaky command's failure that its job already saw twice on the same
// tree (host.retries) is checked again once only: a flake rarely fails
// twice in a row, and each try makes the train wait.
func TestAFailureSeenTwiceIsCheckedAgainOnce(t *testing.T) {
	s := flakyHarness(t, 0.25)
	s.learnFlakes("a", "b", "c")
	s.built("d", "@bd")
	a := s.hear("@bd", "READY d b/d")
	var said []string
	for range 2 {
		j := s.started(a)
		a = s.finish(j.Run, Outcome{Result: Failed, Commit: "m-d", Tip: "t-d", Base: "T", Tree: "tr-d", Command: "make test",
			Line: "make test: FAIL: broken", Tries: 2})
		said = append(said, a.Say...)
	}
	require.Len(t, said, 2)
	assert.Contains(t, said[0], "checking d again before blaming anyone (1 of 1)")
	assert.True(t, strings.HasPrefix(said[1], "CI d FAIL m-d make test: FAIL: broken"), said[1])
	assert.Empty(t, queued(a))
}

// A command that fails for real (its failures never pass again on the
// same tree), or below the threshold, is blamed at once; a threshold of
// 0 turns the learning off.
func TestARealFailureIsBlamedAtOnce(t *testing.T) {
	for name, threshold := range map[string]float64{"never flaky": 0.25, "off": 0} {
		t.Run(name, func(t *testing.T) {
			s := flakyHarness(t, threshold)
			if threshold == 0 {
				s.learnFlakes("a", "b", "c")
			}
			for _, c := range []string{"d", "e"} {
				s.built(c, "@b"+c)
				j := s.started(s.hear("@b"+c, "READY "+c+" b/"+c))
				a := s.finish(j.Run, Outcome{Result: Failed, Commit: "m-" + c, Tip: "t-" + c, Base: "T", Tree: "tr-" + c, Command: "make test", Line: "make test: FAIL"})
				require.Len(t, a.Say, 1)
				assert.True(t, strings.HasPrefix(a.Say[0], "CI "+c+" FAIL"), a.Say[0])
			}
		})
	}
}

// A car whose chain fails on a flaky command is checked again on the same
// chain before it steps back.
func TestAFlakyCarIsCheckedAgainBeforeItStepsBack(t *testing.T) {
	s := flakyHarness(t, 0.25)
	s.learnFlakes("a", "b", "c")
	s.landed()
	car := s.started(s.approve("d", "old"))
	require.Equal(t, Car, car.Kind)
	a := s.finish(car.Run, Outcome{Result: Failed, Commit: "m2-d", Tree: "tr2-d", Base: "T2", Tip: "t-d", Command: "make test", Line: "make test: FAIL"})
	require.Len(t, a.Say, 1)
	assert.Contains(t, a.Say[0], "checking d again before blaming anyone (1 of 2)")
	again := s.started(a)
	assert.Equal(t, Car, again.Kind)
	assert.Equal(t, "d", again.Component)
}
