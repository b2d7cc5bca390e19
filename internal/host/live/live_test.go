package live

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/host"
)

// Items 1, 3 and 5 of the issue: bad refs are refused at once; a good one
// is checked on the merge result and passes; approved, it lands and the
// host says MERGED.
func TestReadyToMerged(t *testing.T) {
	w := newWorld(t, worldOptions{})
	w.startHost()
	w.expect(w.host, "STATUS")
	w.claim("b1", "db")
	for ref, why := range map[string]string{
		"-x":         "starts with -, which git would read as an option",
		"main..b1":   "holds .., a range, not a branch",
		"a;touch":    "holds ';'",
		"b1/db.lock": "is not a valid branch name (git check-ref-format)",
		"b1/nope":    "no branch b1/nope in the host's repository; push it, then say READY again",
	} {
		w.say("b1", "READY db "+ref)
		l := w.expect(w.host, "CI db FAIL")
		assert.Contains(t, l, why, ref)
		w.expect(w.foreman, "FIX db "+w.id("b1"))
	}
	// Spaces or control characters make a malformed line: foreman says
	// ERROR, and the host has nothing to check.
	w.say("b1", "READY db b1 db")
	w.expect(w.foreman, "ERROR "+w.id("b1")+" READY")
	w.commit("main", "main", map[string]string{"README": "the shop\n"}) // main moved on since b1 began
	w.commit("b1/db", "main~1", map[string]string{"db.sql": "create table books;\n"})
	w.say("b1", "READY db b1/db")
	pass := w.expect(w.host, "CI db PASS ")
	commit := strings.TrimPrefix(pass, "CI db PASS ")
	assert.Equal(t, w.tip("main")+" "+w.tip("b1/db")+"\n", w.git("log", "-1", "--format=%P", commit), "checked: the merge of b1/db into main")
	w.expect(w.foreman, "REVIEW db "+w.id("b1")+" b1/db")
	w.say("aud", "AUDIT db PASS")
	w.expect(w.host, "STATUS db")
	w.expect(w.host, "MERGED db")
	w.expect(w.foreman, "OK MERGED db")
	assert.Equal(t, w.git("rev-parse", commit+"^{tree}"), w.git("rev-parse", "main^{tree}"), "what passed landed, as it was checked")
	assert.Equal(t, w.git("log", "-1", "--format=%P", commit), w.git("log", "-1", "--format=%P", "main"), "merged the same way")
	assert.Contains(t, w.git("log", "-1", "--format=%B", "main"), "Component db, built by "+w.id("b1")+", approved by "+w.id("aud")+";",
		"one entry on main's first-parent line, naming the component, its builder and who approved it")
	assert.Len(t, w.said(w.host, "MERGED"), 1)
	assert.Len(t, w.said(w.host, "CI db "), 6, "five refusals and a pass; nothing for the malformed line")
}

// Item 3: a failing check steps the builder back with the first failing
// line and where the log is; the fixed branch passes.
func TestCheckFailureStepsBack(t *testing.T) {
	w := newWorld(t, worldOptions{})
	w.startHost()
	w.claim("b1", "api")
	w.commit("b1/api", "main", map[string]string{"api.go": "func total() { BUG }\n"})
	w.say("b1", "READY api b1/api")
	fail := w.expect(w.host, "CI api FAIL ")
	assert.Contains(t, fail, "FAIL: api.go holds BUG log=")
	fix := w.expect(w.foreman, "FIX api "+w.id("b1")+" 1/20 CI failed: ")
	_, logPath, ok := strings.Cut(fix, " log=")
	require.True(t, ok, fix)
	log, err := os.ReadFile(logPath)
	require.NoError(t, err, "the log is where the verdict says")
	assert.Contains(t, string(log), "FAIL: api.go holds BUG")

	w.commit("b1/api", "b1/api", map[string]string{"api.go": "func total() { return sum }\n"})
	w.say("b1", "READY api b1/api")
	w.expect(w.host, "CI api PASS ")
	w.expect(w.foreman, "REVIEW api")
}

// Item 2: a branch that conflicts with main but rebases cleanly is rebased
// in a private worktree, moved, and the builder told; one that does not is
// CI CONFLICT, naming the files.
func TestConflicts(t *testing.T) {
	w := newWorld(t, worldOptions{})
	base := w.commit("main", "main", map[string]string{"Makefile": "test:\n\tgo tset\n"})
	fix := map[string]string{"Makefile": "test:\n\tgo test\n"}
	w.commit("main", "main", fix)
	w.commit("main", "main", map[string]string{"Makefile": "test:\n\tgo test -race\n"})
	w.startHost()

	w.claim("b1", "web")
	picked, err := w.repo.CommitFiles(bg, base, fix, "the same fix, picked up", gitrepoAuthor)
	require.NoError(t, err)
	old := w.commit("b1/web", picked, map[string]string{"web.html": "<h1>shop</h1>\n"})
	w.say("b1", "READY web b1/web")
	l := w.expect(w.host, w.id("b1")+" web: rebased b1/web onto main")
	assert.Contains(t, l, "("+old[:12]+" -> "+w.tip("b1/web")[:12]+"); fetch it before you go on")
	pass := w.expect(w.host, "CI web PASS ")
	assert.Equal(t, w.tip("main")+" "+w.tip("b1/web")+"\n", w.git("log", "-1", "--format=%P", strings.TrimPrefix(pass, "CI web PASS ")),
		"rebased onto main: what would land is the branch, merged")

	w.claim("b2", "api")
	clash := w.commit("b2/api", base, map[string]string{"Makefile": "test:\n\tmake check\n", "api.go": "package api\n"})
	w.say("b2", "READY api b2/api")
	assert.Equal(t, "CI api CONFLICT Makefile", w.expect(w.host, "CI api "))
	w.expect(w.foreman, "FIX api "+w.id("b2")+" 1/20 merge conflict: Makefile")
	assert.Equal(t, clash, w.tip("b2/api"), "a rebase that conflicts moves nothing")
}

// Item 4: a run whose component leaves CI is cancelled and never reported.
func TestStaleRunsAreNeverReported(t *testing.T) {
	w := newWorld(t, worldOptions{mode: "gate"})
	w.startHost()
	for _, leave := range []struct{ c, b, who, line, then string }{
		{"db", "b1", "op", "RELEASE db", "OK RELEASE db"},
		{"api", "b2", "b2", "ABORT api context_exhaustion_handoff", "TASKS"},
		{"web", "b3", "op", "ASSIGN web @B3", "ACK web"},
	} {
		c, b := leave.c, leave.b
		w.claim(b, c)
		w.commit(b+"/"+c, "main", map[string]string{c + ".txt": c})
		w.say(b, "READY "+c+" "+b+"/"+c)
		w.waitStarted(c)
		w.say(leave.who, strings.ReplaceAll(leave.line, "@B3", w.id("b1")))
		w.expect(w.foreman, leave.then)
		w.waitQueue("no job", func(v host.QueueView) bool { return len(v.Running)+len(v.Waiting) == 0 && !v.At.IsZero() })
	}
	w.openGate()
	// Something the host must answer after all that: db again, READY.
	w.claim("b2", "db")
	w.commit("b2/db", "main", map[string]string{"db2": "db"})
	w.say("b2", "READY db b2/db")
	w.expect(w.host, "CI db PASS ")
	assert.Len(t, w.said(w.host, "CI "), 1, "no verdict for the three stale runs:\n%s", w.dump())
}

// Two READY for one component: foreman refuses the second; one verdict.
func TestTwoReadyOneVerdict(t *testing.T) {
	w := newWorld(t, worldOptions{mode: "gate"})
	w.startHost()
	w.claim("b1", "db")
	w.commit("b1/db", "main", map[string]string{"db": "db"})
	w.say("b1", "READY db b1/db")
	w.waitStarted("db")
	w.say("b1", "READY db b1/db")
	w.expect(w.foreman, "REJECT db "+w.id("b1")+" already waiting for CI")
	w.openGate()
	w.expect(w.host, "CI db PASS ")
	w.expect(w.foreman, "REVIEW db")
	w.claim("b2", "api")
	w.commit("b2/api", "main", map[string]string{"api": "api"})
	w.say("b2", "READY api b2/api")
	w.expect(w.host, "CI api PASS ")
	assert.Len(t, w.said(w.host, "CI db"), 1)
}

// A branch deleted or force-pushed while its checks run.
func TestBranchChangedWhileChecked(t *testing.T) {
	w := newWorld(t, worldOptions{mode: "gate"})
	w.startHost()
	w.claim("b1", "db")
	w.commit("b1/db", "main", map[string]string{"db": "db"})
	w.say("b1", "READY db b1/db")
	w.waitStarted("db")
	w.git("update-ref", "-d", "refs/heads/b1/db")
	w.openGate()
	assert.Equal(t, "CI db FAIL branch b1/db was deleted while its checks ran; push it, then say READY again", w.expect(w.host, "CI db "))
	w.expect(w.foreman, "FIX db")
	w.closeGate("db")

	w.commit("b1/db", "main", map[string]string{"db": "db"})
	w.say("b1", "READY db b1/db")
	w.waitStarted("db")
	forced := w.commit("b1/db", "main", map[string]string{"db": "db v2"})
	w.openGate()
	w.expect(w.host, w.id("b1")+" db: b1/db moved while it was checked; checking it again as it is now")
	pass := w.expect(w.host, "CI db PASS ")
	assert.Equal(t, w.tip("main")+" "+forced+"\n", w.git("log", "-1", "--format=%P", strings.TrimPrefix(pass, "CI db PASS ")), "the branch as it is now")
}
