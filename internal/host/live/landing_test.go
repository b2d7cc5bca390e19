package live

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/host/invariant"
	"github.com/agentforeman/foreman/internal/host/ledger"
	"github.com/agentforeman/foreman/internal/verify"
)

// checkedTrees are the trees of every commit a passing check recorded.
func (w *world) checkedTrees() map[string]bool {
	w.t.Helper()
	trees := map[string]bool{}
	data := w.readFile(w.record)
	for _, commit := range strings.Fields(data) {
		trees[strings.TrimSpace(w.git("rev-parse", commit+"^{tree}"))] = true
	}
	return trees
}

// everyLandingPassed: every commit the host moved main to (main's reflog
// keeps them) has a tree whose checks passed, and there was at least one.
func (w *world) everyLandingPassed() {
	w.t.Helper()
	trees := w.checkedTrees()
	ups, err := w.repo.Reflog(bg, "refs/heads/main")
	require.NoError(w.t, err)
	landed := 0
	for _, u := range ups {
		if !strings.HasPrefix(u.Reason, "foreman host: land ") {
			continue
		}
		landed++
		tree := strings.TrimSpace(w.git("rev-parse", u.Commit+"^{tree}"))
		assert.True(w.t, trees[tree], "main went to %s (%s), whose tree was never checked:\n%s", u.Commit, u.Reason, w.git("log", "--graph", "--oneline", "main"))
	}
	assert.Positive(w.t, landed)
}

// Items 5 and 6: a landing after main moved merges again, checks that, and
// lands it; when what would land fails, the merger says CI FAIL and foreman
// steps the builder back (contract section 7). Every tree main holds
// passed.
func TestLandingsKeepTheTargetPassing(t *testing.T) {
	w := newWorld(t, worldOptions{})
	w.startHost()
	for _, bc := range [][2]string{{"b1", "db"}, {"b2", "api"}, {"b3", "web"}} {
		b, c := bc[0], bc[1]
		w.claim(b, c)
		w.commit(b+"/"+c, "main", map[string]string{c + ".txt": c + "\n"})
		w.say(b, "READY "+c+" "+b+"/"+c)
		w.expect(w.host, "CI "+c+" PASS ")
		w.expect(w.foreman, "REVIEW "+c)
	}
	w.say("aud", "AUDIT db PASS")
	w.expect(w.host, "MERGED db")
	w.say("aud", "AUDIT api PASS")
	w.expect(w.host, "MERGED api") // main had moved: merged again, checked again
	assert.Equal(t, "api.txt\ndb.txt\n", w.git("ls-tree", "--name-only", "main"))
	w.everyLandingPassed()

	before := w.commit("main", "main", map[string]string{"broken.txt": "BUG\n"}) // a push around the queue
	w.say("aud", "AUDIT web PASS")
	fail := w.expect(w.host, "CI web FAIL ")
	assert.Contains(t, fail, "FAIL: broken.txt holds BUG")
	w.expect(w.foreman, "FIX web "+w.id("b3")+" 1/20 CI failed: ")
	assert.Equal(t, before, w.tip("main"), "nothing that fails lands")
	assert.Len(t, w.said(w.host, "MERGED"), 2)
}

// The queue is visible: in the room (STATUS), and in queue.json, which
// foreman status and the board read.
func TestQueueIsVisible(t *testing.T) {
	w := newWorld(t, worldOptions{mode: "gate"})
	w.startHost()
	w.claim("b1", "db")
	w.claim("b2", "api")
	w.commit("b1/db", "main", map[string]string{"db": "db"})
	w.commit("b2/api", "main", map[string]string{"api": "api"})
	w.say("b1", "READY db b1/db")
	w.waitStarted("db")
	w.say("b2", "READY api b2/api")
	w.waitQueue("db running, api waiting", func(v host.QueueView) bool {
		return len(v.Running) == 1 && v.Running[0].Component == "db" && len(v.Waiting) == 1 && v.Waiting[0].Component == "api"
	})
	q := w.queue()
	assert.Equal(t, "b2/api", q.Waiting[0].Ref)
	assert.Equal(t, 1, q.MaxParallel)
	w.say("op", "STATUS")
	l := w.expect(w.host, "queue: ")
	assert.Regexp(t, `^queue: 1 running \(db check \d+s\), 1 waiting \(api\); max_parallel 1$`, l)
	w.say("op", "STATUS api")
	assert.Equal(t, "queue: api check of b2/api waiting, 1 of 1", w.expect(w.host, "queue: "))
	w.openGate()
	w.expect(w.host, "CI db PASS")
	w.expect(w.host, "CI api PASS")
	w.waitQueue("empty, with the verdicts", func(v host.QueueView) bool { return len(v.Running) == 0 && len(v.Recent) == 2 })
	require.Equal(t, "passed", w.queue().Recent[0].Result)
}

// Issue 30, item 5: foreman reads its roles again on SIGHUP; a host that
// landed after losing the merger role would leave the target and the
// board apart (foreman refuses its MERGED). The host reads the
// configuration again before each landing: without the role it lands
// nothing and says why; with it back, it lands.
func TestNoLandingWithoutTheMergerRole(t *testing.T) {
	w := newWorld(t, worldOptions{})
	w.startHostWith(nil, func(o *Options) { o.Core.Backoff = 200 * time.Millisecond })
	w.claim("b1", "db")
	w.commit("b1/db", "main", map[string]string{"db.txt": "db\n"})
	w.say("b1", "READY db b1/db")
	w.expect(w.host, "CI db PASS ")
	w.expect(w.foreman, "REVIEW db")
	before := w.tip("main")

	cfg := w.readFile(w.cfgPath)
	dropped := strings.Replace(cfg, fmt.Sprintf("merger: [%q]", w.host), "merger: []", 1)
	require.NotEqual(t, cfg, dropped)
	require.NoError(t, os.WriteFile(w.cfgPath, []byte(dropped), 0o644))
	w.say("aud", "AUDIT db PASS")
	l := w.expect(w.host, "queue: cannot land db yet: ")
	assert.Contains(t, l, "roles.merger: does not list the host's id "+w.host)
	assert.Equal(t, before, w.tip("main"), "nothing landed")
	assert.Empty(t, w.said(w.host, "MERGED"))

	require.NoError(t, os.WriteFile(w.cfgPath, []byte(cfg), 0o644))
	w.expect(w.host, "MERGED db")
	assert.Equal(t, "db.txt\n", w.git("ls-tree", "--name-only", "main"))
}

// verified ends every host test (newWorld makes it the last cleanup):
// the landing invariant (package invariant) on the world's repository,
// foreman verify run from the configuration alone (the same with or
// without a cluster), from where the chain of receipts began (its first
// landing's receipt says, signed; it must be the first landing's parent as
// main's reflog has it): every commit on main was landed by foreman with a
// receipt that holds, in the chain, but those the test pushed straight to
// main; each lands a commit the room approved (the one the host's CI PASS
// before review merged); its tree, or its batch head's, is one the check
// itself says passed (RECORD); and main was not rolled back below the
// host's signed head.
func (w *world) verified() verify.Report {
	w.t.Helper()
	c, err := config.Load(w.cfgPath, nil, nil)
	require.NoError(w.t, err)
	ups, err := w.repo.Reflog(bg, "refs/heads/main")
	require.NoError(w.t, err)
	first := ""
	for _, u := range ups {
		if strings.HasPrefix(u.Reason, "foreman host: land ") {
			first = strings.TrimSpace(w.git("rev-parse", u.Commit+"^1"))
		}
	}
	if first == "" {
		if !c.Cluster.Enabled() {
			st, err := ledger.Read(c.Host.Ledger)
			if err == nil {
				assert.Empty(w.t, st.First, "the ledger records a landing main's reflog does not have")
			}
		}
		return verify.Report{}
	}
	o, err := verify.Configure(bg, c, nil, "")
	require.NoError(w.t, err)
	o.Unanchored = true // a host killed right after a landing may not have signed its head yet: rollback is still checked against the head there is
	w.mu.Lock()
	byHand := slices.Clone(w.byHand)
	w.mu.Unlock()
	rep, err := invariant.Check(bg, o, invariant.Truth{
		Approved: w.approvedInRoom(),
		Passed:   w.passedTrees(),
		ByHand:   func(id string) bool { return slices.Contains(byHand, id) },
	})
	require.NoError(w.t, err, "%s", rep.Table())
	assert.Equal(w.t, first, rep.Since, "the chain's signed start is where main's reflog says the first landing was made")
	assert.Positive(w.t, rep.Landed)
	return rep
}

// approvedInRoom is what the room approved of each component: the
// builder's commit the host's CI PASS before review merged (its second
// parent; a squash names it in its message), which the auditor was shown.
func (w *world) approvedInRoom() func(c, commit string) bool {
	approved := map[string]map[string]bool{}
	for _, l := range w.said(w.host, "CI ") {
		f := strings.Fields(l)
		if len(f) < 4 || f[2] != "PASS" {
			continue
		}
		made, err := w.repo.CommitOf(bg, f[3])
		if err != nil {
			continue
		}
		tip := ""
		if len(made.Parents) == 2 {
			tip = made.Parents[1]
		} else if body, err := w.repo.Git(bg, "log", "-1", "--format=%B", made.ID); err == nil {
			if _, rest, ok := strings.Cut(body, "its approved commit "); ok && len(rest) >= 40 {
				tip = rest[:40]
			}
		}
		if approved[f[1]] == nil {
			approved[f[1]] = map[string]bool{}
		}
		approved[f[1]][tip] = true
	}
	return func(c, commit string) bool { return approved[c][commit] }
}

// passedTrees are the trees the check itself says it passed on (it
// records each commit it passed in RECORD).
func (w *world) passedTrees() func(tree string) bool {
	trees := map[string]bool{}
	data, _ := os.ReadFile(w.record)
	for _, commit := range strings.Fields(string(data)) {
		if tree, err := w.repo.TreeOf(bg, commit); err == nil {
			trees[tree] = true
		}
	}
	return func(tree string) bool { return trees[tree] }
}

// Hole 5 of "Only approved, tested trees land": main is moved by hand (a
// fix to what the checks run) after the host last knew it. db's branch
// was made on the old main; its check before review, on main as it is,
// passed. After AUDIT PASS its car must not be formed on the main the host
// last knew (where db's branch alone is the old, failing tree, and db's
// builder would be charged for the target's old fault): the car finds main
// moved before it checks anything, the room is told, and the train is made
// again on main as it is, where db lands.
func TestATargetMovedByHandIsNoticedBeforeACarIsChecked(t *testing.T) {
	w := newWorld(t, worldOptions{})
	w.commit("main", "main", map[string]string{"check.txt": "BUG: the check itself is broken\n"})
	w.startHost()
	w.expect(w.host, "STATUS") // in the room: it read where main was first
	w.claim("b1", "db")
	w.commit("b1/db", "main", map[string]string{"db": "db\n"}) // on main as it was
	fixed := w.commit("main", "main", map[string]string{"check.txt": "the check, fixed\n"})
	w.say("b1", "READY db b1/db")
	w.expect(w.host, "CI db PASS ")
	w.expect(w.foreman, "REVIEW db")
	w.say("aud", "AUDIT db PASS")
	w.expect(w.host, "MERGED db")
	assert.Contains(t, w.said(w.host, "queue: main moved outside the queue"), "queue: main moved outside the queue (to "+fixed[:12]+"); the train is checked again on it")
	assert.Empty(t, w.said(w.host, "CI db FAIL"), "db's builder is not charged for main's own fault")
	assert.Equal(t, fixed, strings.TrimSpace(w.git("rev-parse", "main^1")), "landed on main as it is")
}
