package live

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/host"
)

// Item 7: kill -9 of the host mid-check. On restart it ends the orphaned
// check, asks the room what is owed, checks db again and says its verdict
// once; api, released while the host was down, gets none.
func TestKill9MidCheck(t *testing.T) {
	w := newWorld(t, worldOptions{mode: "gate", maxParallel: 2})
	kill := w.startHostProcess()
	w.expect(w.host, "STATUS")
	w.claim("b1", "db")
	w.claim("b2", "api")
	w.commit("b1/db", "main", map[string]string{"db": "db"})
	w.commit("b2/api", "main", map[string]string{"api": "api"})
	w.say("b1", "READY db b1/db")
	w.say("b2", "READY api b2/api")
	w.waitStarted("db")
	w.waitStarted("api")
	kill()
	w.closeGateFiles("db", "api")

	w.say("op", "RELEASE api")
	w.expect(w.foreman, "OK RELEASE api")
	w.startHostProcess()
	w.expect(w.host, "STATUS")
	w.waitStarted("db") // checked again
	w.openGate()
	pass := w.expect(w.host, "CI db PASS ")
	w.expect(w.foreman, "REVIEW db")
	// Something after, to be sure nothing else comes: b3 takes web.
	w.claim("b3", "web")
	w.commit("b3/web", "main", map[string]string{"web": "web"})
	w.say("b3", "READY web b3/web")
	w.expect(w.host, "CI web PASS ")
	assert.Len(t, w.said(w.host, "CI db"), 1, "one verdict for db:\n%s", w.dump())
	assert.Empty(t, w.said(w.host, "CI api"), "none for api, released while the host was down")
	checked, err := os.ReadFile(w.record)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(checked), strings.TrimPrefix(pass, "CI db PASS ")),
		"the orphaned first check was ended with its process group on restart: it never finished")
	assert.NotContains(t, w.git("worktree", "list"), "run-", "no worktree left behind")
}

// Item 7: kill -9 of the host mid-merge (while it checks again what would
// land, main having moved). On restart it lands db once.
func TestKill9MidMerge(t *testing.T) {
	w := newWorld(t, worldOptions{mode: "gate"})
	w.openGate()
	kill := w.startHostProcess()
	w.claim("b1", "db")
	w.commit("b1/db", "main", map[string]string{"db": "db"})
	w.say("b1", "READY db b1/db")
	w.expect(w.host, "CI db PASS ")
	w.expect(w.foreman, "REVIEW db")
	w.commit("main", "main", map[string]string{"hotfix": "x"}) // main moves: the landing must check again
	w.closeGate("db")
	w.say("aud", "AUDIT db PASS")
	w.waitStarted("db")
	kill()
	w.closeGateFiles("db")

	w.startHostProcess()
	w.waitStarted("db")
	w.openGate()
	w.expect(w.host, "MERGED db")
	w.expect(w.foreman, "OK MERGED db")
	assert.Len(t, w.said(w.host, "MERGED"), 1)
	tip := w.tip("b1/db")
	merges := 0
	for _, line := range strings.Split(strings.TrimSpace(w.git("log", "--first-parent", "--format=%P", "main")), "\n") {
		if strings.Contains(line, tip) {
			merges++
		}
	}
	assert.Equal(t, 1, merges, "db landed once:\n%s", w.git("log", "--graph", "--oneline", "main"))
}

// stallAfterLanding lands for real, then never reports it: the host dies
// between moving main and saying MERGED.
type stallAfterLanding struct {
	inner  Jobs
	landed chan struct{}
}

func (s stallAfterLanding) Run(ctx context.Context, j host.Job) host.Outcome {
	o := s.inner.Run(ctx, j)
	if j.Kind == host.Land && o.Result == host.Landed {
		close(s.landed)
		<-ctx.Done()
		return host.Outcome{Run: j.Run, Result: host.Cancelled}
	}
	return o
}

// Item 7: the host dies after main moved and before MERGED was said (its
// ledger never heard of the landing). On restart it finds db on main
// already and says MERGED, landing nothing again. With host.prune on, the
// landing deleted the builder's branch too: "already landed" is decided
// first, from main's history, so the gone branch is not blamed on the
// builder (hole 3 of "Only approved, tested trees land").
func TestDiedAfterLandingBeforeMerged(t *testing.T) {
	for _, prune := range []bool{false, true} {
		t.Run(fmt.Sprintf("prune=%v", prune), func(t *testing.T) {
			w := newWorld(t, worldOptions{})
			landed := make(chan struct{})
			pruning := func(o *Options) { o.Core.Prune = prune }
			w.startHostWith(func(j Jobs) Jobs { return stallAfterLanding{inner: j, landed: landed} }, pruning)
			w.claim("b1", "db")
			w.commit("b1/db", "main", map[string]string{"db": "db"})
			w.say("b1", "READY db b1/db")
			w.expect(w.host, "CI db PASS ")
			w.say("aud", "AUDIT db PASS")
			select {
			case <-landed:
			case <-time.After(3 * time.Minute):
				t.Fatalf("db never landed; the room said:\n%s", w.dump())
			}
			main := w.tip("main")
			w.stopHost()
			assert.Empty(t, w.said(w.host, "MERGED"))
			if prune {
				gone, err := w.repo.RevParse(bg, "refs/heads/b1/db")
				require.NoError(t, err)
				require.Empty(t, gone, "pruned with the landing")
			}

			w.startHostWith(nil, pruning)
			l := w.expect(w.host, "queue: db ")
			assert.Equal(t, "queue: db was already on main at "+main+"; receipt: git notes --ref foreman show "+main[:12], l)
			w.expect(w.host, "MERGED db")
			w.expect(w.foreman, "OK MERGED db")
			assert.Equal(t, main, w.tip("main"), "nothing landed twice")
			assert.Empty(t, w.said(w.host, "CI db FAIL"), "nothing blamed on the builder")
		})
	}
}
