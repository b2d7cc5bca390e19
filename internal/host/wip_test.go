package host

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func wipHarness(t *testing.T) *harness {
	return newHarness(t, func(c *Config) { c.OverlapInterval = 30 * time.Second })
}

// one returns the one job a step started, whatever its kind.
func (s *harness) one(a Actions) Job {
	s.t.Helper()
	require.Len(s.t, a.Start, 1, "one job started: %+v", a)
	return a.Start[0]
}

// kinds lists the kinds of the jobs a step started.
func kinds(a Actions) []Kind {
	var k []Kind
	for _, j := range a.Start {
		k = append(k, j.Kind)
	}
	return k
}

// A check-in naming a branch is merged with every other ref in flight; an
// overlap found is said once per pair and set of files.
func TestOverlapsAreFoundAndSaidOnce(t *testing.T) {
	s := wipHarness(t)
	s.built("api", "@b1")
	s.built("web", "@b2")
	assert.Empty(t, s.hear("@b1", "PROGRESS api 10 branch=b1/api").Start, "nothing else in flight")
	a := s.hear("@b2", "PROGRESS web 10 branch=b2/web")
	scan := s.one(a)
	assert.Equal(t, Job{Run: scan.Run, Kind: Scan, Component: "web", Ref: "b2/web", Owner: "@b2",
		Others: []Link{{Component: "api", Ref: "b1/api", Owner: "@b1"}}}, scan)
	a = s.finish(scan.Run, Outcome{Result: Scanned, Overlaps: []Overlap{{With: "api", Files: []string{"routes.go", "go.mod"}}}})
	assert.Equal(t, []string{"OVERLAP web api go.mod routes.go"}, a.Say)

	// api moves: scanned, the same overlap is not said again.
	scan = s.one(s.hear("@b1", "PROGRESS api 20"))
	assert.Equal(t, "api", scan.Component)
	a = s.finish(scan.Run, Outcome{Result: Scanned, Overlaps: []Overlap{{With: "web", Files: []string{"go.mod", "routes.go"}}}})
	assert.Empty(t, a.Say, "the same pair and files")
	s.now = s.now.Add(time.Minute)
	scan = s.one(s.hear("@b1", "PROGRESS api 30"))
	a = s.finish(scan.Run, Outcome{Result: Scanned, Overlaps: []Overlap{{With: "web", Files: []string{"go.mod"}}}})
	assert.Equal(t, []string{"OVERLAP api web go.mod"}, a.Say, "another set of files")
}

// A host that joined after the ACKs hears a builder name its branch before
// foreman's STATUS answer says who owns the component: the answer was
// decided before the check-in, so the ref is kept until it comes, and is
// the owner's work in progress once it does (a real room did this: no
// OVERLAP was ever said).
func TestABranchNamedBeforeTheHostKnowsTheOwner(t *testing.T) {
	s := wipHarness(t)
	assert.Empty(t, s.hear("@b1", "PROGRESS api 40 branch=b1/api").Start)
	assert.Empty(t, s.hear("@b3", "PROGRESS web 40 branch=b3/web").Start, "not web's owner, as the answer says")
	s.foreman("STATUS api building owner=@b1 since=0s")
	s.foreman("STATUS web building owner=@b2 since=0s")
	scan := s.one(s.hear("@b2", "PROGRESS web 40 branch=b2/web"))
	assert.Equal(t, Job{Run: scan.Run, Kind: Scan, Component: "web", Ref: "b2/web", Owner: "@b2",
		Others: []Link{{Component: "api", Ref: "b1/api", Owner: "@b1"}}}, scan)

	// Nobody owns db: a branch named for it before the answer is nobody's.
	s.hear("@b1", "PROGRESS db 10 branch=b1/db")
	s.foreman("STATUS db pending since=0s")
	assert.Empty(t, s.h.comps["db"].wip.branch)
}

// A host that joined after the builders named their branches learns them
// from foreman's STATUS answers only: each branch so learned is merged with
// the others, as a check-in's would be (a real room did this: the host
// joined after both PROGRESS lines and never said OVERLAP).
func TestABranchLearnedFromStatusIsScanned(t *testing.T) {
	s := wipHarness(t)
	assert.Empty(t, s.foreman("STATUS api building owner=@b1 since=0s progress=40% branch=b1/api").Start, "nothing else in flight")
	scan := s.one(s.foreman("STATUS web building owner=@b2 since=0s progress=40% branch=b2/web"))
	assert.Equal(t, Job{Run: scan.Run, Kind: Scan, Component: "web", Ref: "b2/web", Owner: "@b2",
		Others: []Link{{Component: "api", Ref: "b1/api", Owner: "@b1"}}}, scan)
	a := s.finish(scan.Run, Outcome{Result: Scanned, Overlaps: []Overlap{{With: "api", Files: []string{"shared.txt"}}}})
	assert.Equal(t, []string{"OVERLAP web api shared.txt"}, a.Say)
	assert.Empty(t, s.foreman("STATUS web building owner=@b2 since=1s progress=40% branch=b2/web").Start,
		"the same branch again is no news")
}

// However often a builder checks in, its ref is merged with the others at
// most once per host.overlap_interval.
func TestScansAreBounded(t *testing.T) {
	s := wipHarness(t)
	s.built("api", "@b1")
	s.built("web", "@b2")
	s.hear("@b1", "PROGRESS api 10 branch=b1/api")
	scan := s.one(s.hear("@b2", "PROGRESS web 10 branch=b2/web"))
	s.finish(scan.Run, Outcome{Result: Scanned})
	scans := 0
	for i := range 1000 {
		s.now = s.now.Add(10 * time.Millisecond)
		a := s.h.Heard(s.now, "@b2", true, fmt.Sprintf("PROGRESS web %d", 10+i%80))
		for _, j := range a.Start {
			scans++
			s.h.Finished(s.now, Outcome{Run: j.Run, Result: Scanned})
		}
	}
	assert.Equal(t, 0, scans, "1,000 check-ins within 10 s of the last scan: none")
	wake, ok := s.h.NextWake()
	require.True(t, ok)
	assert.Equal(t, scanAt(s, "web"), wake, "one scan when the interval is up")
	a := s.h.Tick(wake)
	assert.Equal(t, []Kind{Scan}, kinds(a))
}

func scanAt(s *harness, name string) time.Time {
	return s.h.comps[name].wip.scanned.Add(s.h.cfg.OverlapInterval)
}

// No overlap is said with a component merged meanwhile, or that left
// flight.
func TestNoOverlapWithAMergedComponent(t *testing.T) {
	s := wipHarness(t)
	s.built("api", "@b1")
	s.built("web", "@b2")
	s.hear("@b1", "PROGRESS api 10 branch=b1/api")
	scan := s.one(s.hear("@b2", "PROGRESS web 10 branch=b2/web"))
	s.foreman("MERGED api")
	a := s.finish(scan.Run, Outcome{Result: Scanned, Overlaps: []Overlap{{With: "api", Files: []string{"x"}}}})
	assert.Empty(t, a.Say)
}

// A builder that leaves with work pushed (TIMEOUT here) has it pinned; the
// next builder is told once foreman's ACK names it, whichever comes first.
func TestHandoffIsPinnedAndHandedOver(t *testing.T) {
	for _, pinFirst := range []bool{true, false} {
		s := wipHarness(t)
		s.built("api", "@b1")
		s.hear("@b1", "PROGRESS api 40 branch=b1/api")
		a := s.foreman("TIMEOUT api @b1")
		pin := s.one(a)
		assert.Equal(t, Job{Run: pin.Run, Kind: Pin, Component: "api", Ref: "b1/api", Owner: "@b1"}, pin)
		commit := "0123456789abcdef0123456789abcdef01234567"
		want := "@b2 api: refs/foreman/handoff/api/1 (" + commit + ") keeps the work @b1 pushed to b1/api"
		if pinFirst {
			assert.Empty(t, s.finish(pin.Run, Outcome{Result: Pinned, Commit: commit, N: 1}).Say, "no new builder yet")
			a = s.foreman("ACK api @b2 branch=b1/api after TIMEOUT of @b1: progress 40%")
			require.Len(t, a.Say, 1)
			assert.Contains(t, a.Say[0], want)
		} else {
			assert.Empty(t, s.foreman("ACK api @b2 branch=b1/api after TIMEOUT of @b1: progress 40%").Say)
			a = s.finish(pin.Run, Outcome{Result: Pinned, Commit: commit, N: 1})
			require.Len(t, a.Say, 1)
			assert.Contains(t, a.Say[0], want)
		}
		assert.Empty(t, s.foreman("ACK api @b2").Say, "said once")
	}
}

// Every way a component leaves a builder unmerged pins its work; a
// departure of one who named no branch, or a branch someone else named,
// pins nothing.
func TestDeparturesPin(t *testing.T) {
	for _, leave := range []struct{ from, line string }{
		{"@foreman", "TIMEOUT api @b1"},
		{"@foreman", "RETRY api @b1"},
		{"@b1", "ABORT api context_exhaustion_handoff"},
		{"@foreman", "OK RELEASE api from @b1"},
		{"@foreman", "OK ASSIGN api @b2"},
		{"@foreman", "ACK api @b2"},
	} {
		s := wipHarness(t)
		s.built("api", "@b1")
		s.hear("@b1", "PROGRESS api 40 branch=b1/api")
		a := s.hear(leave.from, leave.line)
		assert.Equal(t, []Kind{Pin}, kinds(a), leave.line)
		if leave.line == "OK ASSIGN api @b2" {
			assert.Empty(t, kinds(s.foreman("ACK api @b2")), "one departure, one pin")
		}
	}
	s := wipHarness(t)
	s.built("api", "@b1")
	assert.Empty(t, s.foreman("TIMEOUT api @b1").Start, "no branch named")
	s.built("api", "@b2")
	s.hear("@b2", "PROGRESS api 10 branch=b2/api")
	s.foreman("FIX api @b2 1/3 audit failed: x")
	assert.Empty(t, s.foreman("ACK api @b2").Start, "the same builder: no departure")
}

// A pin the repository could not make now (locked) is tried again after
// the same wait as a check or a landing, not dropped: the departed
// builder's work is pinned and handed over.
func TestALockedPinIsTriedAgain(t *testing.T) {
	s := newHarness(t, func(c *Config) { c.Backoff = 10 * time.Second })
	s.built("api", "@b1")
	s.hear("@b1", "PROGRESS api 40 branch=b1/api")
	pin := s.one(s.foreman("TIMEOUT api @b1"))
	a := s.finish(pin.Run, Outcome{Result: Retry, Line: "the repository is locked by another git process"})
	assert.Equal(t, []string{"queue: cannot pin the work @b1 left on api yet: the repository is locked by another git process; trying again in 10s"}, a.Say)
	assert.Empty(t, a.Start)
	assert.Empty(t, s.foreman("ACK api @b2 branch=b1/api after TIMEOUT of @b1: progress 40%").Say, "not pinned yet: nothing to hand over")
	wake, ok := s.h.NextWake()
	require.True(t, ok)
	again := s.one(s.h.Tick(wake))
	assert.Equal(t, Job{Run: again.Run, Kind: Pin, Component: "api", Ref: "b1/api", Owner: "@b1"}, again)
	commit := "0123456789abcdef0123456789abcdef01234567"
	a = s.finish(again.Run, Outcome{Result: Pinned, Commit: commit, N: 1})
	require.Len(t, a.Say, 1)
	assert.Contains(t, a.Say[0], "@b2 api: refs/foreman/handoff/api/1 ("+commit+") keeps the work @b1 pushed to b1/api")
}

// A builder's ABORT is a departure once foreman takes it (its TASKS, its
// hard-blocker ESCALATE, or the next ACK naming it): what runs for the
// component stops then, and the handoff is the one foreman's ACK names. A
// refused ABORT (the builder no longer owned it, though the host heard the
// ACK that gave it back late: decided before the earlier departure) is no
// departure: the earlier one stays the one handed over (seed 900374 of the
// simulator found it).
func TestAnAbortIsADepartureOnceForemanTakesIt(t *testing.T) {
	s := wipHarness(t)
	s.built("api", "@b1")
	s.hear("@b1", "PROGRESS api 40 branch=b1/api")
	j := s.started(s.hear("@b1", "READY api b1/api"))
	a := s.hear("@b1", "ABORT api phase_incomplete")
	assert.Empty(t, a.Cancel, "not taken yet")
	pin := s.one(a)
	assert.Equal(t, Pin, pin.Kind, "pinned as it leaves")
	a = s.foreman("TASKS api")
	assert.Equal(t, []int{j.Run}, a.Cancel, "taken: its check is stale")
	first := "0123456789abcdef0123456789abcdef01234567"
	s.finish(pin.Run, Outcome{Result: Pinned, Commit: first, N: 1})

	// The ACK that gave api back to @b1 before it left reaches the host
	// late; @b1 says ABORT again, and foreman refuses it.
	s.foreman("ACK api @b1")
	s.now = s.now.Add(time.Minute)
	s.hear("@b1", "PROGRESS api 50 branch=b1/api") // refused too; the host cannot know yet
	var second Job
	for _, j := range s.hear("@b1", "ABORT api phase_incomplete").Start {
		if j.Kind == Pin {
			second = j
		}
	}
	require.Equal(t, Pin, second.Kind)
	s.foreman("REJECT api @b1 nobody owns it; CLAIM it first")
	s.finish(second.Run, Outcome{Result: Pinned, Commit: "fedcba9876543210fedcba9876543210fedcba98", N: 2})
	a = s.foreman("ACK api @b2 branch=b1/api after ABORT by @b1 (phase_incomplete): progress 40%")
	require.Len(t, a.Say, 1)
	assert.Contains(t, a.Say[0], "@b2 api: refs/foreman/handoff/api/1 ("+first+") keeps the work @b1 pushed to b1/api",
		"the departure foreman took, not the one it refused")
}

// A hard blocker: foreman holds the component, and its owner let it go.
func TestAHardBlockerAbortIsTakenByItsEscalation(t *testing.T) {
	s := wipHarness(t)
	s.built("api", "@b1")
	s.hear("@b1", "PROGRESS api 40 branch=b1/api")
	pin := s.one(s.hear("@b1", "ABORT api missing_dependency: libfoo"))
	s.foreman("ESCALATE api hard-blocker missing_dependency: libfoo (from @b1, who let api go); decide, then RESOLVE api")
	assert.Empty(t, s.h.comps["api"].owner)
	commit := "0123456789abcdef0123456789abcdef01234567"
	s.finish(pin.Run, Outcome{Result: Pinned, Commit: commit, N: 1})
	a := s.foreman("ACK api @b2 branch=b1/api after ABORT by @b1 (missing_dependency: libfoo): progress 40%")
	require.Len(t, a.Say, 1)
	assert.Contains(t, a.Say[0], "refs/foreman/handoff/api/1 ("+commit+")")
}

// With host.branch_namespaces, a builder naming a branch outside its own
// namespace in a check-in does not make it its work in progress: nothing
// is scanned as its work (nor pinned when it leaves). Its own branch is.
func TestWorkInProgressIsOnlyInTheBuildersNamespace(t *testing.T) {
	s := newHarness(t, func(c *Config) { c.OverlapInterval = 30 * time.Second; c.BranchNamespaces = true })
	s.built("api", "@b1")
	s.built("web", "@b2")
	assert.Empty(t, s.hear("@b2", "PROGRESS web 10 branch=b2/web").Start, "nothing else in flight")
	assert.Empty(t, s.hear("@b1", "PROGRESS api 10 branch=b2/web").Start, "b2's branch is not b1's work")
	scan := s.one(s.hear("@b1", "PROGRESS api 20 branch=b1/api"))
	assert.Equal(t, "b1/api", scan.Ref)

	off := wipHarness(t)
	off.built("api", "@b1")
	off.built("web", "@b2")
	off.hear("@b2", "PROGRESS web 10 branch=b2/web")
	scan = off.one(off.hear("@b1", "PROGRESS api 10 branch=b2/web"))
	assert.Equal(t, "b2/web", scan.Ref, "without namespaces any branch named is the builder's work")
}
