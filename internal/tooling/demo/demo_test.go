package demo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/bot"
	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/protocol"
	"github.com/agentforeman/foreman/transcript"
)

// testMinute is as fast as a live room lets the story stay the same: below
// about 40ms the AgentChat client's flood guard (2.5 messages a second once
// a burst is spent) delays foreman's replies by several contract minutes.
// Even at 50ms a loaded machine can change the live story, so only the
// simulation (Simulate) is held to it.
const testMinute = 50 * time.Millisecond

// has reports whether some line of lines starts with prefix.
func has(lines []string, prefix string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// assertStory checks that res tells the demo's story: the claim race's
// loser refused, cal timed out on catalog and ada taking it over, a FIX, a
// RETRY, a WAIT and its UNBLOCKED, one hard-blocker escalation an operator
// resolves, and every component merged.
func assertStory(t *testing.T, res *Result) {
	t.Helper()
	require.True(t, res.Complete)
	who := map[string]string{} // sender id by name
	for _, e := range res.Room {
		who[e.Name] = e.From
	}
	at := func(name string) string { return who[name] }

	rejects := res.Said(protocol.ReplyReject)
	assert.True(t, has(rejects, "REJECT db "+at("bea")+" owned by "+at("ada")), "the claim race's loser is refused: %q", rejects)
	timeouts := res.Said(protocol.ReplyTimeout)
	assert.Contains(t, timeouts, "TIMEOUT catalog "+at("cal"))
	acks := res.Said(protocol.ReplyAck)
	assert.True(t, has(acks, "ACK catalog "+at("ada")+" after TIMEOUT of "+at("cal")), "%q", acks)
	fixes := res.Said(protocol.ReplyFix)
	assert.True(t, has(fixes, "FIX auth "+at("bea")+" 1/2 no tests for token refresh"), "%q", fixes)
	assert.Contains(t, res.Said(protocol.ReplyRetry), "RETRY cart "+at("dex"))
	assert.True(t, has(acks, "ACK cart "+at("cal")+" branch=dex/cart after RETRY of "+at("dex")), "the branch dex named in READY is handed over: %q", acks)
	assert.Contains(t, res.Said(protocol.ReplyWait), "WAIT mailer "+at("cal")+" web")
	assert.Contains(t, res.Said(protocol.ReplyUnblocked), "UNBLOCKED mailer "+at("cal"))
	escalations := res.Said(protocol.ReplyEscalate)
	require.Len(t, escalations, 1, "the hard blocker is the only escalation")
	assert.True(t, has(escalations, "ESCALATE payments hard-blocker invalid_specification:"), "%q", escalations)
	assert.True(t, has(res.Said(protocol.ReplyOK), "OK RESOLVE payments"))
	assert.True(t, has(acks, "ACK payments "+at("dex")+" after ABORT by "+at("bea")), "%q", acks)
	assert.Len(t, res.Said(protocol.ReplyMerged), 7)
	assert.Equal(t, []string{"COMPLETE bookshop"}, res.Said(protocol.ReplyComplete))

	assert.Equal(t, 7, res.Merges)
	assert.Equal(t, 1, res.Retries)
	assert.Equal(t, 1, res.Escalations)
	assert.Positive(t, res.Contract)
}

// TestDemoTellsTheWholeStory plays the demo on a virtual clock: the same
// cast and engine as the live demo, with nothing left to timing.
func TestDemoTellsTheWholeStory(t *testing.T) {
	var out bytes.Buffer
	observed := 0
	res, err := Simulate(Options{
		Minute: testMinute, Seed: 1, Out: &out,
		Observe: func(*coordinator.Event, []coordinator.Reply) { observed++ },
	})
	require.NoError(t, err, out.String())
	assertStory(t, res)
	assert.Positive(t, observed, "Observe sees the engine")
	assert.True(t, res.Virtual)
	assert.Contains(t, out.String(), "bookshop complete: 7 components merged")
	assert.Contains(t, out.String(), "(on a virtual clock)")
	assert.Contains(t, out.String(), "REJECT db @bea owned by @ada", "ids are shown as names")
	assert.NotContains(t, out.String(), "\x1b[", "no colour unless asked")

	var again bytes.Buffer
	_, err = Simulate(Options{Minute: testMinute, Seed: 1, Out: &again})
	require.NoError(t, err)
	assert.Equal(t, out.String(), again.String(), "a seed tells the same story, to the line and the second")
}

// TestDemoStoryDoesNotHangOnTheSeed: the script, not the luck of the jitter,
// tells the story, at any pace, with CI gating on or off.
func TestDemoStoryDoesNotHangOnTheSeed(t *testing.T) {
	for _, ci := range []bool{false, true} {
		for _, minute := range []time.Duration{testMinute, time.Minute} {
			for seed := range uint64(10) {
				t.Run(fmt.Sprintf("ci=%v/minute=%s/seed=%d", ci, minute, seed), func(t *testing.T) {
					var out bytes.Buffer
					res, err := Simulate(Options{Minute: minute, Seed: seed, CI: ci, Out: &out, Quiet: true})
					require.NoError(t, err, out.String())
					assertStory(t, res)
					runs := 0
					for _, e := range res.Room {
						if e.Name == ciName && strings.HasPrefix(e.Line, "CI ") {
							runs++
						}
					}
					if ci {
						assert.GreaterOrEqual(t, runs, 7, "CI gates every merge")
					} else {
						assert.Zero(t, runs)
					}
				})
			}
		}
	}
}

// TestLiveDemoCompletesAndReplays runs the real demo: an embedded room
// over WebSockets, the bot with its journal, the cast as real clients, on
// the wall clock. What the story looks like depends on the machine's load,
// so only what holds under any load is checked. (Its name keeps it out of
// -run TestDemo, the quick deterministic tests.)
func TestLiveDemoCompletesAndReplays(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	var onBot *bot.Bot
	observed := 0
	res, err := Run(context.Background(), Options{
		Minute: testMinute, Seed: 1, Out: &out, Dir: dir,
		OnBot:   func(b *bot.Bot) { onBot = b },
		Observe: func(*coordinator.Event, []coordinator.Reply) { observed++ },
	})
	require.NoError(t, err, out.String())
	require.True(t, res.Complete, out.String())
	require.NotNil(t, onBot, "OnBot is called with the bot")
	assert.Positive(t, observed, "Observe is passed to the bot")
	assert.False(t, res.Virtual)
	assert.Equal(t, []string{"COMPLETE bookshop"}, res.Said(protocol.ReplyComplete))
	assert.Contains(t, out.String(), "bookshop complete: 7 components merged")
	assert.Contains(t, out.String(), "journal and recording kept in "+dir)

	_, err = Run(context.Background(), Options{Dir: dir})
	assert.ErrorContains(t, err, "already holds a demo's journal", "a kept directory is not reused")

	// The recording replays: the live bot said exactly what the engine says.
	f, err := os.Open(filepath.Join(dir, "bookshop.txt"))
	require.NoError(t, err)
	defer f.Close()
	tr, err := transcript.Parse("bookshop.txt", f)
	require.NoError(t, err)
	rep, err := transcript.Replay(tr)
	require.NoError(t, err)
	if !rep.Passed() {
		var diff bytes.Buffer
		rep.WriteDiff(&diff)
		t.Fatalf("the recording does not replay:\n%s", diff.String())
	}
}

// TestLiveGitDemo runs the --git demo: builders push real commits, foreman
// host checks and lands them. The scripted git troubles happen whatever
// the machine's load: cart conflicts and is rebased, catalog's first push
// fails its check and is stepped back, auth and catalog overlap before
// either is READY, catalog is handed from cal to ada; main ends with every
// component, and every tree main held passed the check.
func TestLiveGitDemo(t *testing.T) {
	var out bytes.Buffer
	dir := t.TempDir()
	// The host's checks and git are real time, not contract time: on a
	// loaded machine (load 10) the build outran the default limit (46 s
	// at this minute), so the bound here is a hang's, not a pace.
	res, err := Run(context.Background(), Options{Minute: 100 * time.Millisecond, Seed: 1, Out: &out, Git: true, Dir: dir, Limit: 5 * time.Minute})
	require.NoError(t, err, out.String())
	require.True(t, res.Complete, out.String())
	assert.Equal(t, 7, res.Merges, "merged by the host: foreman says OK MERGED")
	var hostLines []string
	for _, e := range res.Room {
		if e.Name == hostName {
			hostLines = append(hostLines, e.Line)
		}
	}
	assert.True(t, has(hostLines, "CI catalog FAIL "), "%q", hostLines)
	assert.True(t, has(res.Said(protocol.ReplyFix), "FIX catalog "), "stepped back")
	rebased := 0
	for _, l := range hostLines {
		if strings.Contains(l, "cart: rebased ") && strings.Contains(l, "/cart onto main") {
			rebased++
		}
	}
	assert.Equal(t, 1, rebased, "%q", hostLines)
	assert.Len(t, filterPrefix(hostLines, "MERGED "), 7)
	assert.Contains(t, out.String(), "log --oneline --graph main\n")
	assert.Contains(t, res.GitLog, "catalog: fix 1")
	// Work in progress (contract section 10): auth's and catalog's overlap
	// is said before either is READY, and catalog, left by cal, is handed
	// to ada from where cal's work was pinned.
	overlaps := filterPrefix(hostLines, "OVERLAP ")
	require.Len(t, overlaps, 1, "%q", hostLines)
	assert.Contains(t, []string{"OVERLAP auth catalog README.md", "OVERLAP catalog auth README.md"}, overlaps[0])
	handed := false
	for _, l := range hostLines {
		handed = handed || strings.Contains(l, " catalog: refs/foreman/handoff/catalog/1 (") && strings.Contains(l, "pushed to cal/catalog")
	}
	assert.True(t, handed, "%q", hostLines)

	repo, err := gitrepo.Open(context.Background(), res.Repo)
	require.NoError(t, err)
	ups, err := repo.Reflog(context.Background(), "refs/heads/main")
	require.NoError(t, err)
	landed := 0
	for _, u := range ups {
		if !strings.HasPrefix(u.Reason, "foreman host: land ") {
			continue
		}
		landed++
		_, err := repo.Git(context.Background(), "diff", "--check", emptyTree, u.Commit)
		assert.NoError(t, err, "main held %s (%s), which fails the check", u.Commit, u.Reason)
	}
	assert.Equal(t, 7, landed, "each component landed once")
	files, err := repo.Git(context.Background(), "ls-tree", "-r", "--name-only", "main")
	require.NoError(t, err)
	for _, c := range Bookshop() {
		assert.Contains(t, files, c.Name+"/"+c.Name+".txt")
	}

	_, err = Simulate(Options{Git: true})
	assert.ErrorContains(t, err, "no virtual clock")
}

func filterPrefix(lines []string, prefix string) []string {
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}
