package gitjob

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/host/invariant"
	"github.com/agentforeman/foreman/internal/host/receipt"
	"github.com/agentforeman/foreman/internal/verify"
)

// shell is the host's core driven over this repository by the runner, one
// job at a time, as foreman host's shell does with one slot: the room's
// lines go in, each job the core starts is run for real, its outcome goes
// back in.
type shell struct {
	t      *testing.T
	f      *fixture
	core   *host.Core
	now    time.Time
	said   []string
	jobs   []host.Job
	key    receipt.Key
	counts map[host.Kind]int
	// approved is what the test's auditor approved of each component: its
	// branch's commit at the time.
	approved map[string]map[string]bool
}

func newShell(t *testing.T, f *fixture, mutate func(*host.Config)) *shell {
	id, err := agentchat.NewIdentity("host")
	require.NoError(t, err)
	key, err := receipt.KeyOf(id.PublicPEM())
	require.NoError(t, err)
	cfg := host.Config{Self: "@host", Coordinator: "@foreman", Gating: true, External: true, MaxParallel: 1,
		Components: []string{"a", "b", "c", "d", "e", "f"}, Mentions: []string{"@foreman"},
		Repository: "shop", Sign: func(s receipt.Signed) ([]byte, error) { return receipt.Sign(s, id) }}
	cfg.Checks = CheckNames(f.runner.o.Checks)
	mutate(&cfg)
	s := &shell{t: t, f: f, core: host.New(cfg, host.State{}), now: time.Unix(1e9, 0), key: key, counts: map[host.Kind]int{}}
	s.take(s.core.Target(s.now, f.tip("main")))
	return s
}

func (s *shell) take(a host.Actions) {
	s.said = append(s.said, a.Say...)
	s.jobs = append(s.jobs, a.Start...)
}

func (s *shell) hear(from, line string) {
	s.now = s.now.Add(time.Second)
	s.take(s.core.Heard(s.now, from, true, line))
}

// approve takes c, built by @bc on b/c, through review to approval.
func (s *shell) approve(c string) {
	if s.approved == nil {
		s.approved = map[string]map[string]bool{}
	}
	if s.approved[c] == nil {
		s.approved[c] = map[string]bool{}
	}
	s.approved[c][s.f.tip("b/"+c)] = true // what the auditor was shown
	s.hear("@foreman", "REVIEW "+c+" @b"+c+" b/"+c)
	s.hear("@aud", "AUDIT "+c+" PASS")
	s.hear("@foreman", "STATUS "+c+" review owner=@b"+c+" pr=b/"+c+" approved=yes")
}

// drain runs every job started, in order, until none is left.
func (s *shell) drain() {
	for len(s.jobs) > 0 {
		j := s.jobs[0]
		s.jobs = s.jobs[1:]
		s.counts[j.Kind]++
		o := s.f.runner.Run(ctx, j)
		o.Run = j.Run
		s.now = s.now.Add(time.Second)
		s.take(s.core.Finished(s.now, o))
	}
}

// A batch of five, bisected with real git: b and d pass alone and fail
// together; every component passes its check before review (the shared
// check of five fails, and is split in halves that pass); approved at
// once behind a, the five are checked as one chain, which fails; bisection
// finds d (b and c passed: d's failure is its own), b and c land by one
// move of main, e and f are checked again without d and land; foreman
// verify accepts every commit on main, the batches' included.
func TestABatchOfSixWithOneCulpritFoundByBisection(t *testing.T) {
	f := newFixture(t, true, nil)
	files := map[string]string{"a": "a", "b": "BUG1", "c": "c", "d": "BUG2", "e": "e", "f": "f"}
	for _, c := range []string{"a", "b", "c", "d", "e", "f"} {
		f.commit("b/"+c, "main", map[string]string{files[c]: c}, c)
	}
	start := f.tip("main")
	s := newShell(t, f, func(c *host.Config) { c.Batch = 6 })
	for _, c := range []string{"a", "b", "c", "d", "e", "f"} {
		s.hear("@foreman", "ACK "+c+" @b"+c)
		s.hear("@b"+c, "READY "+c+" b/"+c)
	}
	s.drain()
	// a's check before review took the one slot alone; the five READYs
	// that came meanwhile were checked as one tree, which failed (b and d
	// together), so in halves, b+c and d+e+f, which passed: nobody was
	// blamed.
	require.Equal(t, 4, s.counts[host.Check], "a's; the five's, shared; then b+c's and d+e+f's")
	require.Equal(t, 4, f.checked())
	require.NotContains(t, strings.Join(s.said, "\n"), "FAIL")
	for _, c := range []string{"a", "b", "c", "d", "e", "f"} {
		require.Contains(t, strings.Join(s.said, "\n"), "CI "+c+" PASS "+passOf(s.said, c), "each passed")
		s.approve(c)
	}
	s.drain()
	assert.Contains(t, strings.Join(s.said, "\n"), "CI d FAIL")
	for _, c := range []string{"a", "b", "c", "e", "f"} {
		assert.Contains(t, s.said, "MERGED "+c)
	}
	assert.NotContains(t, s.said, "MERGED d")
	assert.Equal(t, 5, s.counts[host.Car], "a's, the five's chain, c's, d's, f's again")
	assert.Equal(t, 8, f.checked(), "four checks before review, then four: a's chain is the tree its check before review passed")
	assert.Equal(t, 3, s.counts[host.Land], "a; b and c; e and f")

	s.verified(start, 5)
	landed := s.core.Queue().Landed
	require.Len(t, landed, 5)
	for _, l := range landed {
		// The board links each landing's receipt, a batch's too.
		require.NotEmpty(t, l.File, l.Component)
		data, err := os.ReadFile(filepath.Join(f.dir, "logs", l.File))
		require.NoError(t, err, l.Component)
		assert.Contains(t, string(data), "payload", l.Component)
	}
}

// verified ends each test with the landing invariant (package invariant):
// every commit on main since start landed by the host, n of them, each
// approved (as the test approved it), its tree or its batch head's passed
// (as the check itself says, RECORD.passed), once, in the chain, anchored
// by the host's signed head.
func (s *shell) verified(start string, n int) {
	s.t.Helper()
	passed := map[string]bool{}
	data, _ := os.ReadFile(s.f.record + ".passed")
	for _, commit := range strings.Fields(string(data)) {
		if tree, err := s.f.repo.TreeOf(ctx, commit); err == nil {
			passed[tree] = true
		}
	}
	rep, err := invariant.Check(ctx, verify.Options{Repo: s.f.repo, Target: "main", Trusted: []receipt.Key{s.key}, Repository: "shop", Now: s.now},
		invariant.Truth{
			Approved: func(c, commit string) bool { return s.approved[c][commit] },
			Passed:   func(tree string) bool { return passed[tree] },
		})
	s.t.Logf("foreman verify:\n%s", rep.Table())
	require.NoError(s.t, err)
	assert.Equal(s.t, n, rep.Landed)
	assert.Equal(s.t, start, rep.Since, "the chain's signed start")
	assert.NotEmpty(s.t, rep.Anchors, "the host's signed head anchors its newest landing")
}

// passOf is the commit of the last CI c PASS said.
func passOf(said []string, c string) string {
	for i := len(said) - 1; i >= 0; i-- {
		if rest, ok := strings.CutPrefix(said[i], "CI "+c+" PASS "); ok {
			return strings.Fields(rest)[0]
		}
	}
	return fmt.Sprintf("(no CI %s PASS)", c)
}

// Four READYs, one slot, host.batch.max 4: a is checked alone (the slot
// was free), b, c and d as one tree; approved, a lands as its check before
// review passed, and b, c and d by one check of their chain on a: three
// runs of the checks for four components, every commit on main accepted
// by foreman verify.
func TestSharedChecksAndABatchLandFourWithThreeRuns(t *testing.T) {
	f := newFixture(t, true, nil)
	comps := []string{"a", "b", "c", "d"}
	for _, c := range comps {
		f.commit("b/"+c, "main", map[string]string{c: c}, c)
	}
	start := f.tip("main")
	s := newShell(t, f, func(c *host.Config) { c.Batch, c.Components = 4, comps })
	for _, c := range comps {
		s.hear("@foreman", "ACK "+c+" @b"+c)
		s.hear("@b"+c, "READY "+c+" b/"+c)
	}
	s.drain()
	require.Equal(t, 2, f.checked(), "a's, then b+c+d's")
	for _, c := range []string{"b", "c", "d"} {
		require.Contains(t, strings.Join(s.said, "\n"), "CI "+c+" PASS "+passOf(s.said, c)+" (checked merged with main as b+c+d: one run for 3)")
	}
	for _, c := range comps {
		s.approve(c)
	}
	s.drain()
	for _, c := range comps {
		assert.Contains(t, s.said, "MERGED "+c)
	}
	assert.Equal(t, 3, f.checked())
	assert.Equal(t, 2, s.counts[host.Land], "a; then b, c and d at once")
	s.verified(start, 4)
}

// A failure that waits (host.failure_depth 1), with real git: without CI
// gating each car finds its approved commit; a's chain fails, b's chain,
// which holds a, passes: a's failure was not its to carry, and the two
// land by one move of main, no tree of a alone on it. The failure is a
// flake (the check fails the first time it runs), or a's own and fixed by
// b (a adds a file that holds BUG; b's branch, built on a's, fixes it).
// With no depth, a is blamed at once and b lands alone: what b holds
// passed.
func TestAFailureThatWaitsLandsWithTheCarBehindIt(t *testing.T) {
	cases := map[string]struct {
		options  func(*Options)
		branches func(*fixture)
	}{
		"a flake": {
			options: func(o *Options) { o.Env[0] = "HELPER=flaky" },
			branches: func(f *fixture) {
				for _, c := range []string{"a", "b"} {
					f.commit("b/"+c, "main", map[string]string{c: c}, c)
				}
			},
		},
		"fixed by the car behind it": {
			branches: func(f *fixture) {
				f.commit("b/a", "main", map[string]string{"a": "BUG: half done"}, "a, half done")
				f.commit("b/b", "b/a", map[string]string{"a": "a, done", "b": "b"}, "b, and a done")
			},
		},
	}
	for name, tc := range cases {
		for _, depth := range []int{1, 0} {
			t.Run(fmt.Sprintf("%s, depth %d", name, depth), func(t *testing.T) {
				f := newFixture(t, true, tc.options)
				comps := []string{"a", "b"}
				tc.branches(f)
				start := f.tip("main")
				s := newShell(t, f, func(c *host.Config) {
					c.Gating, c.MaxParallel, c.Batch, c.FailureDepth, c.Components = false, 2, 2, depth, comps
				})
				for _, c := range comps {
					s.hear("@foreman", "ACK "+c+" @b"+c)
					s.approve(c)
				}
				s.drain()
				if depth == 0 {
					assert.Contains(t, strings.Join(s.said, "\n"), "CI a FAIL", "blamed at once")
					assert.NotContains(t, s.said, "MERGED a")
					assert.Contains(t, s.said, "MERGED b")
					s.verified(start, 1)
					return
				}
				assert.NotContains(t, strings.Join(s.said, "\n"), "FAIL")
				assert.Contains(t, s.said, "MERGED a")
				assert.Contains(t, s.said, "MERGED b")
				assert.Equal(t, 1, s.counts[host.Land], "one move of main")
				s.verified(start, 2)
			})
		}
	}
}

// A flaky command retried, not blamed, with real git and host.retries 1:
// a lands alone (its chain is its check before review); b and c, approved
// meanwhile, are a batch checked once on c's chain, whose run is once (a
// failure there is bisected, not retried) and flakes; bisection checks b's
// chain, which passes; c's failure is then on top of a pass but was seen
// once only, so c's chain is checked once more, passes, and lands: nobody
// hears FAIL.
func TestAFlakeInABatchIsCheckedAgainNotBlamed(t *testing.T) {
	f := newFixture(t, true, func(o *Options) { o.Env[0] = "HELPER=flaky" })
	comps := []string{"a", "b", "c"}
	for _, c := range comps {
		f.commit("b/"+c, "main", map[string]string{c: c}, c)
	}
	start := f.tip("main")
	s := newShell(t, f, func(c *host.Config) { c.Batch, c.Retries, c.Components = 2, 1, comps })
	flaked := f.record + ".flaked"
	require.NoError(t, os.WriteFile(flaked, nil, 0o644)) // the checks before review pass
	for _, c := range comps {
		s.hear("@foreman", "ACK "+c+" @b"+c)
		s.hear("@b"+c, "READY "+c+" b/"+c)
		s.drain()
	}
	require.Equal(t, 3, f.checked(), "each on main")
	require.NoError(t, os.Remove(flaked)) // the next run flakes
	for _, c := range comps {
		s.approve(c)
	}
	s.drain()
	assert.NotContains(t, strings.Join(s.said, "\n"), "FAIL")
	for _, c := range comps {
		assert.Contains(t, s.said, "MERGED "+c)
	}
	assert.Equal(t, 6, f.checked(), "then c's chain (a flake, no retry in its run), b's, and c's once more before blame")
	s.verified(start, 3)
}
