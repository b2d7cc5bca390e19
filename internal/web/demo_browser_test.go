package web

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/bot"
	"github.com/agentforeman/foreman/internal/tooling/demo"
)

// recordStates is run in the page: it notes every state each card shows,
// as the page changes, so the test can check the order afterwards without
// having to catch each state while it lasts.
const recordStates = `(() => {
  window.seenStates = {};
  const note = () => document.querySelectorAll('#nodes li').forEach((li) => {
    const seen = (window.seenStates[li.dataset.name] ||= []);
    if (li.dataset.state && seen[seen.length - 1] !== li.dataset.state) seen.push(li.dataset.state);
  });
  new MutationObserver(note).observe(document.getElementById('nodes'),
    { subtree: true, childList: true, attributes: true, attributeFilter: ['data-state'] });
  note();
  return true;
})()`

// TestBrowserFollowsTheDemo loads the board, then plays `foreman demo`'s
// whole accelerated story under it (claim race, timeout, failed audits,
// RETRY, WAIT, a hard blocker settled by the operator), and checks that
// every card went from pending through work to merged, in that order, and
// that the page ends at COMPLETE.
func TestBrowserFollowsTheDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser and plays the demo")
	}
	requireChromium(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	board := New(Options{Logger: zerolog.Nop()})
	ln := listen(t)
	served := make(chan error, 1)
	go func() { served <- board.Serve(ctx, ln) }()
	defer func() { cancel(); <-served }()

	p := openPage(t, "http://"+ln.Addr().String()+"/")
	p.waitFor("the board waiting for foreman", `document.getElementById('problem').textContent === 'foreman is starting'`)
	p.eval(`String(` + recordStates + `)`)

	type result struct {
		res *demo.Result
		err error
	}
	played := make(chan result, 1)
	go func() {
		res, err := demo.Run(ctx, demo.Options{
			Minute: 50 * time.Millisecond, Seed: 1,
			Observe: board.Observe, OnBot: func(b *bot.Bot) { board.Attach(b) },
		})
		played <- result{res, err}
	}()
	var res *demo.Result
	select {
	case r := <-played:
		require.NoError(t, r.err, "the demo")
		res = r.res
	case <-time.After(2 * time.Minute):
		t.Fatal("the demo did not end within 2 minutes")
	}
	p.waitFor("COMPLETE in the room log", `[...document.querySelectorAll('#log li.said .text')].some(e => e.textContent === 'COMPLETE bookshop')`)
	// The demo stops its bot as soon as the room hears COMPLETE, and a
	// stopped bot answers no more views: the board then shows the last one
	// it read, marked stale. It reads one after every line, so that is
	// nearly always the complete build, but on a loaded machine the bot
	// can stop first, a line or two short of the end.
	p.waitFor("the final board", `document.getElementById('build-state').textContent === 'COMPLETE' || !document.getElementById('problem').hidden`)
	complete := p.eval(`document.getElementById('build-state').textContent`) == "COMPLETE"
	if complete {
		p.waitFor("seven cards merged", `document.querySelectorAll('#nodes li[data-state="merged"]').length === 7`)
	} else {
		t.Logf("the demo's bot stopped before the board read its final view; the page says: %s", p.text("#problem"))
		assert.Contains(t, p.text("#problem"), "last board")
	}

	// The demo does not tell the board its members' names: told now, the
	// page puts them in place of the ids it shows already.
	assert.NotEqual(t, "0", p.eval(`String(document.querySelectorAll('#log .id:not(.named)').length)`), "ids before names")
	members := map[string]bool{}
	for _, e := range res.Room {
		board.Named(e.From, e.Name)
		members[e.From] = true
	}
	ids, err := json.Marshal(slices.Sorted(maps.Keys(members)))
	require.NoError(t, err)
	// Every member's id, that is: "@agent" in a suggestion is no one's.
	p.waitFor("names in place of ids", `document.querySelectorAll('#log .id.named').length > 0 &&
		![...document.querySelectorAll('#log .id:not(.named), #nodes .id:not(.named)')].some((e) => `+string(ids)+`.includes(e.dataset.id))`)
	assert.Contains(t, p.text(`#nodes li[data-name="db"] .owner`), "built by ")
	assert.NotContains(t, p.text(`#nodes li[data-name="db"] .owner`), "@", "a name, not the id")
	p.requireAllCardsInView()
	p.waitFor("the newest log line in view", newestInView)
	assert.Regexp(t, contractTime, p.text("#elapsed"))
	p.screenshot("board-demo-complete.png")

	var seen map[string][]string
	require.NoError(t, json.Unmarshal([]byte(p.eval(`JSON.stringify(window.seenStates)`)), &seen))
	t.Logf("states the page showed: %v", seen)
	require.Len(t, seen, 7)
	// The page samples the build (an update at most every 100ms), so a
	// short state can fall between two updates: db is claimed in the race
	// that opens the demo, often before the page has seen it pending. The
	// order, though, is always the build's.
	pending, working, merged := 0, 0, 0
	for name, states := range seen {
		assert.NotEqual(t, "merged", states[0], "%s was seen before it was merged", name)
		n := strings.Count(strings.Join(states, " "), "merged")
		assert.LessOrEqual(t, n, 1, "%s merged once: %v", name, states)
		if n == 1 {
			assert.Equal(t, "merged", states[len(states)-1], "nothing after merged: %s %v", name, states)
			merged++
		}
		if states[0] == "pending" {
			pending++
		}
		if slices.ContainsFunc(states, func(s string) bool { return s == "building" || s == "review" }) {
			working++
		}
	}
	if complete {
		assert.Equal(t, 7, merged)
	} else {
		assert.GreaterOrEqual(t, merged, 5)
	}
	assert.GreaterOrEqual(t, pending, 4, "cards seen pending")
	assert.GreaterOrEqual(t, working, 4, "cards seen at work")
}
