package host

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/host/receipt"
)

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

type harness struct {
	t    *testing.T
	h    *Core
	now  time.Time
	recs []Record // every record the core made, in order: its ledger
}

// keep adds what a step recorded to the harness's ledger.
func (s *harness) keep(a Actions) Actions {
	s.recs = append(s.recs, a.Records...)
	return a
}

// restarted is the host started again from its ledger, as the next leader
// would (the target where the shell finds it): nothing of the old core's
// memory, only its records.
func (s *harness) restarted(target string) *harness {
	var rp Replay
	for _, r := range s.recs {
		rp.Apply(r)
	}
	n := &harness{t: s.t, h: New(s.h.cfg, rp.State()), now: s.now, recs: slices.Clone(s.recs)}
	n.keep(n.h.Pending())
	n.keep(n.h.Target(n.now, target))
	return n
}

// ranChecks is the report of a run in which each of cmds passed.
func ranChecks(cmds ...string) *receipt.Checks {
	ev := &receipt.Checks{Commands: []receipt.Command{}}
	for _, c := range cmds {
		ev.Commands = append(ev.Commands, receipt.Command{Command: c, Result: "passed"})
	}
	return ev
}

// testKey signs the harness's receipts.
var testKey = agentchat.IdentityFromSeed("host", [32]byte{7})

func newHarness(t *testing.T, mutate func(*Config)) *harness {
	cfg := Config{Self: "@host", Coordinator: "@foreman", Gating: true, External: true, MaxParallel: 1,
		Components: []string{"db", "api", "web"}, Mentions: []string{"@foreman"},
		Repository: "shop", Sign: func(s receipt.Signed) ([]byte, error) { return receipt.Sign(s, testKey) }}
	if mutate != nil {
		mutate(&cfg)
	}
	return &harness{t: t, h: New(cfg, State{}), now: t0}
}

func (s *harness) tick(d time.Duration) Actions {
	s.now = s.now.Add(d)
	return s.keep(s.h.Tick(s.now))
}

func (s *harness) hear(from, line string) Actions {
	s.now = s.now.Add(time.Second)
	return s.keep(s.h.Heard(s.now, from, true, line))
}

func (s *harness) foreman(line string) Actions { return s.hear("@foreman", line) }

// finish ends a job as the shell would report it: what passed names its
// tree and says each check passed (the harness's config has none), and a
// landing has its note written (unless the test says how).
func (s *harness) finish(run int, o Outcome) Actions {
	s.now = s.now.Add(time.Second)
	o.Run = run
	if o.Result == Passed && o.Tree == "" && o.Commit != "" {
		o.Tree = "tr-" + o.Commit
	}
	if o.Result == Passed && !o.Reused && o.Checks == nil {
		o.Checks = ranChecks(s.h.cfg.Checks...)
	}
	if o.Result == Landed && !o.Already {
		o.Noted = true
	}
	return s.keep(s.h.Finished(s.now, o))
}

// started returns the one job of the queue (a check, a car, a landing) a
// step started; scans and pins of work in progress (wip_test.go) go by.
func (s *harness) started(a Actions) Job {
	s.t.Helper()
	q := queued(a)
	require.Len(s.t, q, 1, "one job started: %+v", q)
	return q[0]
}

// queued is the jobs of the queue a step started: no scan, no pin, no
// note, no signed head; each without the receipt and its place in the
// chain, its tries, the trees that passed and the auditors
// named in its commit's message, which landing_test.go looks at.
func queued(a Actions) []Job {
	var q []Job
	for _, j := range a.Start {
		if j.Kind != Scan && j.Kind != Pin && j.Kind != Note && j.Kind != Head {
			j.Receipt, j.Passed, j.Auditors, j.Chain, j.Tries = nil, nil, nil, nil, 0
			for i := range j.Ahead {
				j.Ahead[i].Auditors = nil
			}
			q = append(q, j)
		}
	}
	return q
}

// landing finishes the car job a step started for the front car, whose
// tree passed its check before review on the target as it is: no check
// runs again (Reused), the job only makes the commit that lands (its
// message names who approved it), here the one the check made. It returns
// the landing that starts then.
func (s *harness) landing(a Actions) Job {
	s.t.Helper()
	car := s.started(a)
	require.Equal(s.t, Car, car.Kind, "%+v", car)
	require.NotNil(s.t, car.Pass, "%+v", car)
	p := car.Pass
	return s.started(s.finish(car.Run, Outcome{Result: Passed, Reused: true, Commit: p.Commit, Tip: p.Tip, Base: p.Base, Tree: p.Tree}))
}

// built puts c in building by @b.
func (s *harness) built(c, b string) {
	s.foreman("ACK " + c + " " + b)
}

func TestReadyIsCheckedAndPassed(t *testing.T) {
	s := newHarness(t, nil)
	s.built("api", "@b1")
	j := s.started(s.hear("@b1", "READY api b1/api"))
	assert.Equal(t, Job{Run: 1, Kind: Check, Component: "api", Ref: "b1/api", Owner: "@b1"}, j)
	a := s.finish(j.Run, Outcome{Result: Passed, Commit: "c0ffee", Tip: "t1", Base: "m1", Tree: "tr1",
		Rebased: &Rebase{Branch: "b1/api", From: "aaaaaaaaaaaaaaaa", To: "bbbbbbbbbbbbbbbb"}})
	assert.Equal(t, []string{
		"@b1 api: rebased b1/api onto main (aaaaaaaaaaaa -> bbbbbbbbbbbb); fetch it before you go on",
		"CI api PASS c0ffee",
	}, a.Say)
	require.Len(t, a.Records, 3)
	assert.Equal(t, OpEnd, a.Records[0].Op)
	assert.Equal(t, OpTree, a.Records[1].Op, "what passed on the tree, and how, before anything uses it")
	assert.Equal(t, Record{Op: OpPass, Component: "api", Pass: &Pass{Component: "api", Owner: "@b1", Ref: "b1/api",
		Tip: "t1", Commit: "c0ffee", Base: "m1", Tree: "tr1"}}, a.Records[2], "the pass is recorded, before it is said")
}

func TestFailAndConflictVerdicts(t *testing.T) {
	s := newHarness(t, nil)
	s.built("api", "@b1")
	j := s.started(s.hear("@b1", "READY api b1/api"))
	a := s.finish(j.Run, Outcome{Result: Failed, Commit: strings.Repeat("ab", 20), Line: "make test: --- FAIL: TestLogin",
		Log: "/logs/api-1.log", URL: "http://127.0.0.1:9090/ci/logs/api-1.log"})
	assert.Equal(t, []string{"CI api FAIL abababababab make test: --- FAIL: TestLogin log=/logs/api-1.log url=http://127.0.0.1:9090/ci/logs/api-1.log"}, a.Say)
	s.foreman("FIX api @b1 1/5 CI failed: ...")
	j = s.started(s.hear("@b1", "READY api b1/api"))
	a = s.finish(j.Run, Outcome{Result: Conflicted, Files: []string{"go.sum", "routes.go"}})
	assert.Equal(t, []string{"CI api CONFLICT go.sum routes.go"}, a.Say)
	s.foreman("FIX api @b1 1/3 merge conflict: go.sum routes.go")
	j = s.started(s.hear("@b1", "READY api b1/api;rm"))
	a = s.finish(j.Run, Outcome{Result: Invalid, Line: "ref b1/api;rm holds ';', which no branch name here may hold"})
	assert.Equal(t, []string{"CI api FAIL ref b1/api;rm holds ';', which no branch name here may hold"}, a.Say)
}

func TestTheLogAlwaysFitsInTheFix(t *testing.T) {
	o := Outcome{Commit: strings.Repeat("f", 40), Line: strings.Repeat("very long failure ", 50),
		Log: "/home/someone/project/.foreman/host/logs/api-17.log", URL: "http://127.0.0.1:9090/ci/logs/api-17.log"}
	d := failDetails(o)
	assert.LessOrEqual(t, len("CI failed: "+d), 300-5)
	assert.True(t, strings.HasSuffix(d, " log="+o.Log+" url="+o.URL), d)
}

func TestStaleRunsAreCancelledAndNeverReported(t *testing.T) {
	for _, leave := range []struct{ from, line string }{
		{"@foreman", "FIX api @b1 1/5 CI failed: no CI verdict within 10m"},
		{"@foreman", "RETRY api @b1"},
		{"@foreman", "TIMEOUT api @b1"},
		{"@foreman", "OK RELEASE api"},
		{"@foreman", "OK RELEASE api from @b1"},
		{"@foreman", "OK ASSIGN api @b2"},
		{"@foreman", "ACK api @b2"},
		{"@foreman", "ESCALATE api ci-exhausted no CI verdict within 10m (5/5) on b1/api by @b1; ..."},
		{"@foreman", "TASKS db api"},
		{"@foreman", "OK MERGED api"},
		{"@foreman", "MERGED api"},
		{"@foreman", "REVIEW api @b1 b1/api"},
	} {
		s := newHarness(t, nil)
		s.built("api", "@b1")
		j := s.started(s.hear("@b1", "READY api b1/api"))
		a := s.hear(leave.from, leave.line)
		assert.Equal(t, []int{j.Run}, a.Cancel, leave.line)
		assert.Empty(t, queued(a), leave.line)
		a = s.finish(j.Run, Outcome{Result: Passed, Commit: "c0ffee"})
		assert.Empty(t, a.Say, "no verdict for a stale run (%s)", leave.line)
		assert.Empty(t, s.h.Queue().Running)
	}
	// Lines that leave c where it is stop nothing.
	s := newHarness(t, nil)
	s.built("api", "@b1")
	j := s.started(s.hear("@b1", "READY api b1/api"))
	for _, l := range []struct{ from, line string }{
		{"@foreman", "ESCALATE api claim-dispute @x sent 3 builder lines about api, which @b1 owns; ..."},
		{"@foreman", "REJECT api @b1 already waiting for CI on b1/api; wait for its verdict"},
		{"@foreman", "STATUS api building owner=@b1"}, // older than the READY: a view never stops a run
		{"@b2", "ABORT api not mine"},
		{"@foreman", "UNBLOCKED web @b3"},
		{"@b1", "READY api b1/api"}, // a second READY: foreman refuses it
	} {
		a := s.hear(l.from, l.line)
		assert.Empty(t, a.Cancel, l.line)
		assert.Empty(t, queued(a), l.line)
	}
	a := s.finish(j.Run, Outcome{Result: Passed, Commit: "c0ffee"})
	assert.Equal(t, []string{"CI api PASS c0ffee"}, a.Say)
}

func TestReadyFromWhomItMayConcern(t *testing.T) {
	s := newHarness(t, nil)
	s.built("api", "@b1")
	assert.Empty(t, s.hear("@b2", "READY api b2/api").Start, "not the owner")
	assert.Empty(t, s.hear("@b1", "READY api").Start, "malformed: foreman says ERROR")
	assert.Empty(t, s.hear("@b1", "> READY api b1/api").Start, "quoted: chat")
	assert.Empty(t, s.hear("@b1", "READY web b1/web").Start, "unknown to the host: kept until STATUS says")
	j := s.started(s.hear("@b1", "@foreman **READY api b1/api**"))
	assert.Equal(t, "b1/api", j.Ref, "decorated and addressed as foreman reads it")

	s = newHarness(t, func(c *Config) { c.Gating = false })
	s.built("api", "@b1")
	assert.Empty(t, s.hear("@b1", "READY api b1/api").Start, "CI gating off: nothing to check")

	s = newHarness(t, func(c *Config) { c.Verified = true })
	s.built("api", "@b1")
	s.now = s.now.Add(time.Second)
	assert.Empty(t, s.h.Heard(s.now, "@b1", false, "READY api b1/api").Start, "unverified when verification is required")
}

func TestMaxParallelAndOrder(t *testing.T) {
	s := newHarness(t, func(c *Config) { c.MaxParallel = 2 })
	for _, c := range []string{"db", "api", "web"} {
		s.built(c, "@"+c)
	}
	j1 := s.started(s.hear("@db", "READY db x/db"))
	j2 := s.started(s.hear("@api", "READY api x/api"))
	assert.Empty(t, s.hear("@web", "READY web x/web").Start, "two at a time")
	q := s.h.Queue()
	assert.Len(t, q.Running, 2)
	require.Len(t, q.Waiting, 1)
	assert.Equal(t, "web", q.Waiting[0].Component)
	a := s.finish(j2.Run, Outcome{Result: Passed, Commit: "x"})
	j3 := s.started(a)
	assert.Equal(t, "web", j3.Component)
	s.finish(j1.Run, Outcome{Result: Passed, Commit: "y"})
	assert.Len(t, s.h.Queue().Running, 1)
}

func TestLandingIsConfirmedThenOneAtATime(t *testing.T) {
	s := newHarness(t, func(c *Config) { c.MaxParallel = 3; c.Auditors = []string{"@aud"} })
	s.h.Target(s.now, "base")
	s.built("api", "@b1")
	j := s.started(s.hear("@b1", "READY api b1/api"))
	s.finish(j.Run, Outcome{Result: Passed, Commit: "m1", Tip: "t1", Base: "base", Tree: "tr"})
	s.foreman("REVIEW api @b1 b1/api")
	assert.Empty(t, s.hear("@b2", "AUDIT api PASS").Say, "not an auditor")
	assert.Empty(t, s.hear("@b1", "AUDIT api PASS").Say, "the builder")
	a := s.hear("@aud", "AUDIT api PASS")
	assert.Equal(t, []string{"STATUS api"}, a.Say, "asked, not guessed")
	assert.Empty(t, a.Start)
	assert.Empty(t, s.hear("@aud", "AUDIT api PASS").Say, "asked once")
	a = s.foreman("STATUS api review owner=@b1 since=3m pr=b1/api approved=yes")
	land := s.landing(a)
	assert.Equal(t, Job{Run: land.Run, Kind: Land, Component: "api", Ref: "b1/api", Owner: "@b1", Base: "base", Tip: "t1", Commit: "m1", Tree: "tr"},
		land, "the check before review was made on the target as it is: its tree lands, nothing is checked again")

	// Another approval is checked on top of it, beside the landing.
	s.built("db", "@b2")
	j = s.started(s.hear("@b2", "READY db b2/db"))
	s.finish(j.Run, Outcome{Result: Passed, Commit: "m2", Tip: "t2", Base: "base", Tree: "tr2"})
	s.foreman("REVIEW db @b2 b2/db")
	s.hear("@aud", "AUDIT db PASS")
	car := s.started(s.foreman("STATUS db review owner=@b2 pr=b2/db approved=yes"))
	assert.Equal(t, Job{Run: car.Run, Kind: Car, Component: "db", Ref: "b2/db", Owner: "@b2", Base: "base",
		Ahead: []Link{{Component: "api", Tip: "t1", Ref: "b1/api", Owner: "@b1"}}, Tip: "t2", Target: "base", Landing: "m1",
		Pass: &Pass{Component: "db", Owner: "@b2", Ref: "b2/db", Tip: "t2", Commit: "m2", Base: "base", Tree: "tr2"}}, car)
	s.built("web", "@b3")
	assert.NotEmpty(t, s.hear("@b3", "READY web b3/web").Start, "checks go on beside it")

	a = s.finish(land.Run, Outcome{Result: Landed, Commit: "m1", Noted: true})
	assert.Equal(t, []string{"queue: api landed on main at m1; receipt: git notes --ref foreman show m1", "MERGED api"}, a.Say)
	assert.Equal(t, Record{Op: OpLanded, Component: "api", Commit: "m1", Base: "base", Tip: "t1"}, a.Records[1])
	assert.Equal(t, Record{Op: OpNoted, Commit: "m1"}, a.Records[2])
	assert.Empty(t, queued(a), "db's check is still running")
	assert.Empty(t, s.foreman("OK MERGED api").Cancel)

	// What would land fails now: the merger says so (contract section 7).
	a = s.finish(car.Run, Outcome{Result: Failed, Commit: "m3aaaaaaaaaaaaaa", Line: "make: FAIL", Log: "/l/db-5.log"})
	assert.Equal(t, []string{"CI db FAIL m3aaaaaaaaaa make: FAIL log=/l/db-5.log"}, a.Say)
}

func TestApprovalNotConfirmedLandsNothing(t *testing.T) {
	s := newHarness(t, nil)
	s.built("api", "@b1")
	s.foreman("REVIEW api @b1 b1/api")
	s.hear("@aud", "AUDIT api PASS")
	a := s.foreman("STATUS api review owner=@b1 pr=b1/api")
	assert.Empty(t, a.Start)
	a = s.hear("@aud", "AUDIT api PASS")
	assert.Equal(t, []string{"STATUS api"}, a.Say, "may ask again")

	s = newHarness(t, func(c *Config) { c.External = false })
	s.built("api", "@b1")
	s.foreman("REVIEW api @b1 b1/api")
	assert.Empty(t, s.hear("@aud", "AUDIT api PASS").Say, "merge mode accept: foreman merges")
	assert.Empty(t, s.foreman("STATUS api review owner=@b1 pr=b1/api approved=yes").Start)
}

func TestRetryWaitsAndSaysWhyOnce(t *testing.T) {
	s := newHarness(t, func(c *Config) { c.Backoff = 10 * time.Second })
	s.built("api", "@b1")
	j := s.started(s.hear("@b1", "READY api b1/api"))
	a := s.finish(j.Run, Outcome{Result: Retry, Line: "the repository is locked"})
	assert.Equal(t, []string{"queue: cannot check api yet: the repository is locked; trying again in 10s"}, a.Say)
	assert.Empty(t, a.Start)
	wake, ok := s.h.NextWake()
	require.True(t, ok)
	assert.Equal(t, s.now.Add(10*time.Second), wake)
	assert.Empty(t, s.tick(5*time.Second).Start)
	j2 := s.started(s.tick(5 * time.Second))
	assert.Greater(t, j2.Run, j.Run, "a new run")
	a = s.finish(j2.Run, Outcome{Result: Retry, Line: "the repository is locked"})
	assert.Empty(t, a.Say, "said once")
	wake, _ = s.h.NextWake()
	assert.Equal(t, s.now.Add(20*time.Second), wake, "twice as long")
	// It leaves CI meanwhile: gone from the queue.
	assert.Empty(t, s.foreman("RETRY api @b1").Cancel, "queued, not running: nothing to stop")
	assert.Empty(t, s.h.Queue().Waiting)
	assert.Empty(t, s.tick(time.Minute).Start)
}

func TestMovedIsCheckedAgain(t *testing.T) {
	s := newHarness(t, nil)
	s.built("api", "@b1")
	j := s.started(s.hear("@b1", "READY api b1/api"))
	a := s.finish(j.Run, Outcome{Result: Moved})
	assert.Equal(t, []string{"@b1 api: b1/api moved while it was checked; checking it again as it is now"}, a.Say)
	assert.Equal(t, "api", s.started(a).Component)
}

// After a restart the host knows nothing of the room: it asks STATUS, and
// the answer starts what is owed. A READY heard before the answer waits
// for it.
func TestRestartLearnsFromStatus(t *testing.T) {
	cfg := Config{Self: "@host", Coordinator: "@foreman", Gating: true, External: true, MaxParallel: 4,
		Components: []string{"db", "api", "web", "cart"}, Repository: "shop", Sign: newHarness(t, nil).h.cfg.Sign}
	pass := Pass{Component: "db", Owner: "@b1", Ref: "b1/db", Tip: "t", Commit: "m", Base: "b", Tree: "tr"}
	h := New(cfg, State{Passes: map[string]Pass{"db": pass}, LastRun: 7, Trees: []receipt.Checks{{Run: 3, Tree: "tr"}},
		InFlight: []Record{{Op: OpStart, Run: 7, Kind: "check", Component: "api"}}})
	a := h.Pending()
	assert.Equal(t, []Record{{Op: OpEnd, Run: 7, Component: "api", Result: "interrupted"}}, a.Records)
	now := t0
	h.Target(now, "b") // the shell reads the target at start
	a = h.Joined(now)
	assert.Equal(t, []string{"STATUS"}, a.Say)
	a = h.Heard(now, "@b3", true, "READY cart b3/cart")
	assert.Empty(t, a.Start, "cart is unknown yet")
	var started []Job
	for _, l := range []string{
		"STATUS db review owner=@b1 pr=b1/db approved=yes",
		"STATUS api ci owner=@b2 since=20m pr=b2/api next=ci_timeout in=2m",
		"STATUS web merged built_by=@b4",
		"STATUS cart building owner=@b3",
	} {
		started = append(started, h.Heard(now, "@foreman", true, l).Start...)
	}
	require.Len(t, started, 3)
	assert.Equal(t, Job{Run: 8, Kind: Car, Component: "db", Ref: "b1/db", Owner: "@b1", Base: "b", Tip: "t", Target: "b", Pass: &pass, Tries: 1,
		Passed: []string{"tr"}, Auditors: []string{}}, started[0],
		"what passed lands, if the target is still where it was checked: its tree passed, so nothing is checked again")
	assert.Equal(t, Job{Run: 9, Kind: Check, Component: "api", Ref: "b2/api", Owner: "@b2", Passed: []string{"tr"}, Tries: 1}, started[1],
		"a check is told the trees that passed: one of them is not checked again")
	assert.Equal(t, Job{Run: 10, Kind: Check, Component: "cart", Ref: "b3/cart", Owner: "@b3", Passed: []string{"tr"}, Tries: 1}, started[2], "the READY after the view")
	_, ok := h.NextWake()
	assert.False(t, ok, "answered: nothing to ask again")

	a = h.Finished(now, Outcome{Run: 8, Result: Passed, Reused: true, Commit: "m2", Tip: "t", Base: "b", Tree: "tr"})
	require.Len(t, a.Start, 1)
	land := a.Start[0]
	require.NotNil(t, land.Chain)
	assert.Equal(t, receipt.Link{Seq: 1, Digest: receipt.StatementDigest(land.Receipt), Commit: "m2", Start: "b"}, *land.Chain,
		"the chain's first landing: where the host began is the target it lands on")
	land.Receipt, land.Chain = nil, nil
	assert.Equal(t, Job{Run: 11, Kind: Land, Component: "db", Ref: "b1/db", Owner: "@b1", Base: "b", Tip: "t", Commit: "m2", Tree: "tr"}, land,
		"the commit the car made, whose message names the auditors")
}

func TestStatusIsAskedAgainWhenUnanswered(t *testing.T) {
	s := newHarness(t, func(c *Config) { c.Resync = time.Minute })
	assert.Equal(t, []string{"STATUS"}, s.h.Joined(s.now).Say)
	assert.Empty(t, s.tick(30*time.Second).Say)
	assert.Equal(t, []string{"STATUS"}, s.tick(30*time.Second).Say)
	s.foreman("STATUS db pending")
	s.foreman("STATUS api pending")
	assert.Equal(t, []string{"STATUS"}, s.tick(time.Minute).Say, "web was not in the answer")
	s.foreman("STATUS db pending")
	s.foreman("STATUS api pending")
	s.foreman("STATUS web pending")
	assert.Empty(t, s.tick(time.Hour).Say)
}

func TestDuplicateReadyAfterAnUnheardFix(t *testing.T) {
	s := newHarness(t, nil)
	s.built("api", "@b1")
	j := s.started(s.hear("@b1", "READY api b1/api"))
	// foreman's FIX (ci_timeout) crossed the builder's new READY.
	assert.Empty(t, s.hear("@b1", "READY api b1/api").Start)
	a := s.foreman("FIX api @b1 1/5 CI failed: no CI verdict within 10m")
	assert.Equal(t, []int{j.Run}, a.Cancel)
	assert.Equal(t, []string{"STATUS api"}, a.Say, "the host asks whether foreman took the READY")
	assert.Equal(t, "api", s.started(s.foreman("STATUS api ci owner=@b1 pr=b1/api")).Component)
}

func TestQueueAnswersStatus(t *testing.T) {
	s := newHarness(t, func(c *Config) { c.MaxParallel = 1 })
	assert.Equal(t, []string{"queue: empty; max_parallel 1"}, s.hear("@op", "STATUS").Say)
	s.built("api", "@b1")
	s.built("db", "@b2")
	s.hear("@b1", "READY api b1/api")
	s.hear("@b2", "READY db b2/db")
	s.now = s.now.Add(time.Minute)
	assert.Equal(t, []string{"queue: 1 running (api check 1m2s), 1 waiting (db); max_parallel 1"}, s.hear("@op", "STATUS").Say)
	assert.Empty(t, s.hear("@op", "STATUS").Say, "once per 10s")
	assert.Equal(t, []string{"queue: db check of b2/db waiting, 1 of 1"}, s.hear("@op", "STATUS db").Say)
	assert.Equal(t, []string{"queue: api check of b1/api running for 1m5s"}, s.hear("@op", "STATUS api").Say)
	assert.Empty(t, s.hear("@op", "STATUS web").Say, "not in the queue")
	for _, l := range s.hear("@op", "STATUS api").Say {
		_, err := s.h.reader.Read(l)
		assert.NoError(t, err)
		cmd, _ := s.h.reader.Read(l)
		assert.Zero(t, cmd.Verb, "a queue line is chat, never a protocol line: %s", l)
	}
}

// An auditor quick on the trigger passes c after the host's CI PASS and
// before foreman's REVIEW reaches the host: foreman took the audit, so the
// host asks once the REVIEW is in.
func TestAuditBeforeReviewArrives(t *testing.T) {
	s := newHarness(t, func(c *Config) { c.MaxParallel = 2 })
	s.built("api", "@b1")
	j := s.started(s.hear("@b1", "READY api b1/api"))
	s.finish(j.Run, Outcome{Result: Passed, Commit: "m1"})
	assert.Empty(t, s.hear("@aud", "AUDIT api PASS").Say)
	assert.Equal(t, []string{"STATUS api"}, s.foreman("REVIEW api @b1 b1/api").Say)
	assert.Equal(t, Car, s.started(s.foreman("STATUS api review owner=@b1 pr=b1/api approved=yes")).Kind)

	// Without such an audit, REVIEW asks nothing.
	s.built("db", "@b2")
	j = s.started(s.hear("@b2", "READY db b2/db"))
	s.finish(j.Run, Outcome{Result: Passed, Commit: "m2"})
	assert.Empty(t, s.foreman("REVIEW db @b2 b2/db").Say)
}

// Names only foreman can make known: a flood of READY for made-up
// components costs the host nothing.
func TestMadeUpNamesAreNotKept(t *testing.T) {
	s := newHarness(t, nil)
	for i := range 1000 {
		s.hear("@x", fmt.Sprintf("READY made-up-%d x", i))
	}
	assert.Len(t, s.h.comps, 0)
	s.hear("@b1", "READY api b1/api") // declared: kept until STATUS says who owns it
	assert.Len(t, s.h.comps, 1)
}

// A view of c said before the host's verdict reached foreman (someone's
// STATUS) comes after the verdict: it must not start c's job again.
func TestOlderViewsDoNotRestartWhatWasReported(t *testing.T) {
	s := newHarness(t, nil)
	s.built("api", "@b1")
	j := s.started(s.hear("@b1", "READY api b1/api"))
	s.finish(j.Run, Outcome{Result: Passed, Commit: "m1", Tip: "t1", Base: "b0", Tree: "tr1"})
	assert.Empty(t, s.foreman("STATUS api ci owner=@b1 pr=b1/api").Start, "no second check, no second verdict")
	s.foreman("REVIEW api @b1 b1/api")
	s.hear("@aud", "AUDIT api PASS")
	car := s.started(s.foreman("STATUS api review owner=@b1 pr=b1/api approved=yes"))
	land := s.started(s.finish(car.Run, Outcome{Result: Passed, Commit: "m1", Base: "b1", Tip: "t1", Tree: "tr1", Reused: true}))
	a := s.finish(land.Run, Outcome{Result: Landed, Commit: "m1", Noted: true})
	assert.Contains(t, a.Say, "MERGED api")
	assert.Empty(t, s.foreman("STATUS api review owner=@b1 pr=b1/api approved=yes").Start, "no second landing, no second MERGED")
	s.foreman("OK MERGED api")

	// A verdict foreman refused leaves the host not knowing: the next view says.
	s.built("db", "@b2")
	j = s.started(s.hear("@b2", "READY db b2/db"))
	s.finish(j.Run, Outcome{Result: Passed, Commit: "m2"})
	s.foreman("REJECT db @host not waiting for CI (held)")
	assert.NotEmpty(t, s.foreman("STATUS db ci owner=@b2 pr=b2/db").Start)
}

// A READY whose tree passed before is answered from the record: its PASS
// says so, the record of how the tree passed is kept as it was (a landing's
// receipt names those checks), and no run is counted. A tree forgotten
// meanwhile is checked.
func TestAReadyOfATreeThatPassedIsNotCheckedAgain(t *testing.T) {
	s := newHarness(t, func(c *Config) { c.Checks = []string{"make test"} })
	s.built("api", "@b1")
	j := s.started(s.hear("@b1", "READY api b1/api"))
	s.finish(j.Run, Outcome{Result: Passed, Commit: "m", Tip: "t", Base: "T", Tree: "tr",
		Checks: &receipt.Checks{Commands: []receipt.Command{{Command: "make test", Result: "passed"}}}})
	// Another READY whose merge with the target is that tree (the same
	// files: here another component's branch).
	s.built("web", "@b2")
	j = s.started(s.hear("@b2", "READY web b2/web"))
	a := s.finish(j.Run, Outcome{Result: Passed, Reused: true, Commit: "m2", Tip: "t2", Base: "T", Tree: "tr"})
	assert.Equal(t, []string{"CI web PASS m2 (its tree passed before: not checked again)"}, a.Say)
	ev, ok := s.h.trees.get("tr")
	require.True(t, ok)
	assert.Equal(t, []receipt.Command{{Command: "make test", Result: "passed"}}, ev.Commands, "how it passed, as recorded")
	assert.Equal(t, 1, s.h.Queue().CheckRuns)

	// Forgotten meanwhile: checked, not answered from a record that is gone.
	s.h.trees = newRecent[receipt.Checks](maxTrees)
	s.built("db", "@b3")
	j = s.started(s.hear("@b3", "READY db b3/db"))
	a = s.finish(j.Run, Outcome{Result: Passed, Reused: true, Commit: "m3", Tip: "t3", Base: "T", Tree: "tr"})
	assert.Empty(t, a.Say)
	again := s.started(a)
	assert.Equal(t, Check, again.Kind)
	assert.Equal(t, "db", again.Component)
}
