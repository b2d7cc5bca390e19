package live

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/host/receipt"
)

// sixInTheTrain takes a..f to approval with every car held at the gate:
// b1 builds a and b, b2 c and d, b3 e and f; each pushes its own file, d's
// saying it does not work with b (it passes alone, fails beside b).
func sixInTheTrain(t *testing.T, w *world) {
	t.Helper()
	w.openGate()
	builders := map[string]string{"a": "b1", "b": "b1", "c": "b2", "d": "b2", "e": "b3", "f": "b3"}
	for _, c := range []string{"a", "b", "c", "d", "e", "f"} {
		b := builders[c]
		w.claim(b, c)
		content := c + "\n"
		if c == "d" {
			content = "conflicts-with:b\n"
		}
		w.commit(b+"/"+c, "main", map[string]string{c: content})
		w.say(b, "READY "+c+" "+b+"/"+c)
		w.expect(w.host, "CI "+c+" PASS ")
		w.expect(w.foreman, "REVIEW "+c)
	}
	w.closeGate("a", "b", "c", "d", "e", "f")
	for _, c := range []string{"a", "b", "c", "d", "e", "f"} {
		w.say("aud", "AUDIT "+c+" PASS")
	}
	// a lands what its check passed; b..f are checked on their chains.
	w.expect(w.foreman, "OK MERGED a")
	w.waitQueue("five cars checking", func(q host.QueueView) bool {
		n := 0
		for _, c := range q.Train {
			if c.State == "checking" {
				n++
			}
		}
		return n == 5
	})
}

// The first case, with real git and a real room: a train of six
// lands in order; d, which fails only beside b, steps back alone (b is not
// blamed, e and f are checked again without d and land), then lands once
// fixed. Every tree main held passed the checks, and each component landed
// once.
func TestTrainOfSixLandsInOrderWithOneSalvaged(t *testing.T) {
	w := newWorld(t, worldOptions{components: []string{"a", "b", "c", "d", "e", "f"}, mode: "gate", maxParallel: 6,
		rules: "  max_claims_per_agent: 2\n"})
	w.startHost()
	sixInTheTrain(t, w)
	q := w.queue()
	require.Len(t, q.Train, 5)
	assert.Equal(t, "main+b+c+d", q.Train[3].On, "e is checked on the target (with a) and every car ahead of it")
	w.openGate()

	w.awaitAll(w.foreman, "FIX d ", "OK MERGED b", "OK MERGED c", "OK MERGED e", "OK MERGED f")
	assert.Contains(t, w.said(w.foreman, "FIX d ")[0], "d does not work with b")
	assert.Empty(t, w.said(w.host, "CI b FAIL"), "b is not blamed")
	w.commit("b2/d", "b2/d", map[string]string{"d": "d, fixed\n"})
	w.say("b2", "READY d b2/d")
	w.expect(w.foreman, "REVIEW d")
	w.say("aud", "AUDIT d PASS")
	w.expect(w.foreman, "OK MERGED d")

	order := []string{}
	for _, l := range w.said(w.host, "queue: ") {
		if name, ok := strings.CutPrefix(l, "queue: "); ok && strings.Contains(name, " landed on main") {
			order = append(order, strings.Fields(name)[0])
		}
	}
	assert.Equal(t, []string{"a", "b", "c", "e", "f", "d"}, order)
	for _, c := range []string{"a", "b", "c", "d", "e", "f"} {
		assert.Len(t, w.said(w.host, "MERGED "+c), 1, "%s said merged once", c)
	}
	w.everyLandedTreePassed()
}

// awaitAll waits until sender has said a line starting with each prefix,
// in any order.
func (w *world) awaitAll(sender string, prefixes ...string) {
	w.t.Helper()
	require.Eventually(w.t, func() bool {
		for _, p := range prefixes {
			if len(w.said(sender, p)) == 0 {
				return false
			}
		}
		return true
	}, 3*time.Minute, 10*time.Millisecond, "waited in vain for %q from %s; the room said:\n%s", prefixes, sender, w.dump())
}

// everyLandedTreePassed: each commit main's first-parent history gained
// was checked, and passed: its tree, or, landed in a batch, its batch's
// head's tree, the head on main above it (its receipt, its git note, says
// which head; nothing looser).
func (w *world) everyLandedTreePassed() {
	w.t.Helper()
	var checked []string // the trees of the commits the checks passed on
	for _, c := range strings.Fields(w.readFile(w.record)) {
		checked = append(checked, strings.TrimSpace(w.git("rev-parse", c+"^{tree}")))
	}
	var above []string // main's commits, newest first, down to the one judged
	for _, line := range strings.Split(strings.TrimSpace(w.git("log", "--first-parent", "--format=%H %s", "main")), "\n") {
		c, subject, _ := strings.Cut(line, " ")
		above = append(above, c)
		if subject == "root" || strings.HasPrefix(subject, "work on main") {
			continue // made by the test, not landed
		}
		passedAs := c
		if head := w.batchHead(c); head != "" {
			assert.Contains(w.t, above, head, "%s landed in a batch whose head %s is not on main above it", c, head)
			passedAs = head
		}
		tree := strings.TrimSpace(w.git("rev-parse", passedAs+"^{tree}"))
		assert.Contains(w.t, checked, tree, "main held %s, whose tree %s (its own, or its batch's head %s's) no check passed:\n%s",
			c, tree, passedAs, w.git("log", "--graph", "--oneline", "main"))
	}
}

// batchHead is the head of the batch c's receipt says it landed in, or ""
// (landed alone, or no receipt).
func (w *world) batchHead(c string) string {
	note, err := w.repo.Note(bg, receipt.NotesRef, c)
	if err != nil || len(note) == 0 {
		return ""
	}
	var env receipt.Envelope
	require.NoError(w.t, json.Unmarshal(note, &env))
	body, err := base64.StdEncoding.DecodeString(env.Payload)
	require.NoError(w.t, err)
	var st receipt.Statement
	require.NoError(w.t, json.Unmarshal(body, &st))
	if b := st.Predicate.Batch; b != nil {
		return b.Head
	}
	return ""
}

// A flaky check is run again on the same tree and reported flaky: the
// builder is not stepped back, and the queue counts it.
func TestFlakyCheckIsReportedFlaky(t *testing.T) {
	w := newWorld(t, worldOptions{mode: "flaky"})
	w.startHost()
	w.claim("b1", "db")
	w.commit("b1/db", "main", map[string]string{"db": "db\n"})
	w.say("b1", "READY db b1/db")
	pass := w.expect(w.host, "CI db PASS ")
	assert.Contains(t, pass, "(flaky: ")
	assert.Contains(t, pass, "failed, then passed on the same tree)")
	w.expect(w.foreman, "REVIEW db")
	assert.Empty(t, w.said(w.foreman, "FIX"))
	w.waitQueue("a flaky count", func(q host.QueueView) bool { return len(q.Flaky) == 1 })
}

// A command whose failures passed again on the same tree (learned from
// a, b and c, each failing once then passing on its retry) is flaky: when
// d's check fails on it twice (the retry too), the host checks d again
// before blaming anyone, and d passes; d's builder never hears FAIL, and
// the queue marks the command flaky.
func TestAFlakyCommandIsLearnedAndNotBlamed(t *testing.T) {
	w := newWorld(t, worldOptions{components: []string{"a", "b", "c", "d"}, mode: "flakylearn", maxParallel: 1,
		rules: "  max_claims_per_agent: 2\n"})
	w.startHost()
	for i, c := range []string{"a", "b", "c"} {
		b := []string{"b1", "b2", "b3"}[i]
		w.claim(b, c)
		w.commit(b+"/"+c, "main", map[string]string{c: c + "\n"})
		w.say(b, "READY "+c+" "+b+"/"+c)
		assert.Contains(t, w.expect(w.host, "CI "+c+" PASS "), "(flaky: ")
	}
	w.claim("b1", "d")
	w.commit("b1/d", "main", map[string]string{"d": "d\n"})
	w.say("b1", "READY d b1/d")
	again := w.expect(w.host, "queue: ")
	assert.Contains(t, again, "failed on d, and it is flaky (3 of its 4 failures passed again on the same tree): checking d again before blaming anyone (1 of 1)", "its job tried it twice already (host.retries)")
	w.expect(w.host, "CI d PASS ")
	assert.Empty(t, w.said(w.host, "CI d FAIL"))
	assert.Empty(t, w.said(w.foreman, "FIX d"))
	w.waitQueue("the command marked flaky", func(q host.QueueView) bool {
		return len(q.Commands) == 1 && q.Commands[0].Flaky && q.Commands[0].PassedAgain == 4
	})
}

// kill -9 of the host while the train's cars are checked: on restart the
// train is made again from the room (foreman's STATUS) and the ledger;
// nothing lands twice, no stale verdict is said, and every component lands.
func TestKill9MidTrain(t *testing.T) {
	w := newWorld(t, worldOptions{components: []string{"a", "b", "c", "d", "e", "f"}, mode: "gate", maxParallel: 6,
		rules: "  max_claims_per_agent: 2\n"})
	kill := w.startHostProcess()
	sixInTheTrain(t, w)
	kill()
	w.closeGateFiles("a", "b", "c", "d", "e", "f")
	w.startHostProcess()
	w.openGate()
	w.awaitAll(w.foreman, "FIX d ", "OK MERGED b", "OK MERGED c", "OK MERGED e", "OK MERGED f")
	assert.Empty(t, w.said(w.host, "queue: main moved"), "the restarted host read where main is")
	for _, c := range []string{"a", "b", "c", "e", "f"} {
		assert.Len(t, w.said(w.host, "MERGED "+c), 1, "%s said merged once", c)
	}
	assert.Len(t, w.said(w.host, "CI d FAIL"), 1, "one verdict on d")
	w.everyLandedTreePassed()
	tips := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(w.git("log", "--first-parent", "--format=%P", "main")), "\n") {
		for _, p := range strings.Fields(line)[1:] {
			tips[p]++
		}
	}
	for p, n := range tips {
		assert.Equal(t, 1, n, "%s landed %d times", p, n)
	}
}

// The target moved by hand around the queue while the train's cars were
// checked: the next landing finds it, the train is made again on it, and
// everything lands on top of the hand's commit, each tree checked.
func TestTargetMovedByHandMidTrain(t *testing.T) {
	w := newWorld(t, worldOptions{components: []string{"a", "b", "c", "d", "e", "f"}, mode: "gate", maxParallel: 6,
		rules: "  max_claims_per_agent: 2\n"})
	w.startHost()
	sixInTheTrain(t, w)
	hand := w.commit("main", "main", map[string]string{"hotfix": "by hand\n"})
	w.openGate()
	w.awaitAll(w.host, "queue: main moved outside the queue", "MERGED b", "MERGED c", "MERGED e", "MERGED f")
	w.awaitAll(w.foreman, "FIX d ")
	for _, c := range []string{"b", "c", "e", "f"} {
		assert.Len(t, w.said(w.host, "MERGED "+c), 1)
	}
	ok, err := w.repo.IsAncestor(bg, hand, w.tip("main"))
	require.NoError(t, err)
	assert.True(t, ok, "the hand's commit stays on main")
	w.everyLandedTreePassed()
}
