package web

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/coordinator"
)

// wholeText says whether every text of the element e (a JavaScript
// expression) is in view: none cut, scrolled or clipped.
func wholeText(e string) string {
	return `(() => {
  const e = ` + e + `;
  return [e, ...e.querySelectorAll('h3, p')].every((x) => x.hidden || getComputedStyle(x).display === 'none' ||
    (x.scrollWidth <= x.clientWidth + 1 && x.scrollHeight <= x.clientHeight + 1));
})()`
}

// TestBrowserReadsEasily checks the board's frictions of issue 48, in a
// real browser: the places a line names (a check's log, its URL) are
// links in the "Needs a decision" panel, the room log and on the card,
// and nothing else is (javascript: stays text); a member's name is never
// broken inside a word ("forema / n"); a card whose text is cut shows all
// of it when pointed at, or focused; the host's queue is headed "CI queue".
func TestBrowserReadsEasily(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	requireChromium(t)
	lb := startLiveBuild(t, []coordinator.Component{{Name: "db"}, {Name: "api", Deps: []string{"db"}}}, "b1", "a-builder-with-a-long-name")
	lb.expect("TASKS db")
	lb.say("b1", "CLAIM db")
	lb.expect("ACK db")
	const logPath, logURL = "/tmp/foreman-host/logs/db-1.log", "http://127.0.0.1:9/ci/logs/db-1.log"
	lb.say("b1", "ABORT db missing_dependency: the check db failed: go vet found a copy of a lock value in a struct passed by value "+
		"log="+logPath+" url="+logURL+". Not a link: javascript:alert(1)")
	lb.expect("ESCALATE db hard-blocker")
	p := openPage(t, lb.URL)
	p.waitFor("the attention panel", `!document.getElementById('attention').hidden`)
	p.waitFor("the escalation in the room log", `[...document.querySelectorAll('#log li.said .text')].some(e => e.textContent.startsWith('ESCALATE db'))`)

	links := func(sel string) []string {
		var hrefs []string
		require.NoError(t, json.Unmarshal([]byte(p.eval(`JSON.stringify([...document.querySelectorAll(`+"`"+sel+"`"+`)].map(a => a.getAttribute('href')))`)), &hrefs))
		return hrefs
	}
	want := []string{"ci/logs/db-1.log", logURL}
	assert.Equal(t, want, links(`#attention-list a`), "the log and its URL are links in the attention panel")
	assert.Equal(t, want, links(`#log li.said a.place`), "and in foreman's line in the room log")
	assert.Equal(t, want, links(`#log li.heard a.place`), "and in the builder's")
	assert.Equal(t, want, links(`#nodes li[data-name="db"] .note a`), "and on the card")
	assert.Equal(t, logPath, p.text(`#attention-list a[href="ci/logs/db-1.log"]`), "the path, as the host gave it")
	assert.Equal(t, "_blank", p.eval(`document.querySelector('#attention-list a').target`))
	assert.Equal(t, "0", p.eval(`String(document.querySelectorAll('a[href^="javascript"], a[href^="JAVASCRIPT"]').length)`), "only http and https are links")
	assert.Contains(t, p.text("#attention-list"), "url="+logURL+". Not a link: javascript:alert(1)", "the text itself is unchanged")

	// Names are whole, on one line, in the member list.
	p.waitFor("the member list", `document.querySelectorAll('#members li').length === 3`)
	var broken []string
	require.NoError(t, json.Unmarshal([]byte(p.eval(`JSON.stringify([...document.querySelectorAll('#members .who')].filter((e) => {
  const r = document.createRange();
  r.selectNodeContents(e);
  return r.getClientRects().length !== 1 || e.scrollWidth > e.clientWidth + 1;
}).map((e) => e.textContent))`)), &broken))
	assert.Empty(t, broken, "member names broken or cut")
	assert.Contains(t, p.text("#members"), "foreman")

	// A card cut short shows all of itself when pointed at, or focused.
	card := node("db")
	require.Equal(t, "false", p.eval(`String(`+wholeText(card)+`)`), "the long reason is cut on the card at first")
	var at struct{ X, Y float64 }
	require.NoError(t, json.Unmarshal([]byte(p.eval(`JSON.stringify((() => { const r = `+card+`.getBoundingClientRect(); return {X: r.left + r.width / 2, Y: r.top + 20}; })())`)), &at))
	p.do(chromedp.MouseEvent("mouseMoved", at.X, at.Y))
	p.waitFor("the whole card, pointed at", wholeText(card))
	p.screenshot("board-card-pointed-at.png")
	p.do(chromedp.MouseEvent("mouseMoved", 2, 2))
	p.waitFor("the card cut again", `!`+wholeText(card))
	p.eval(`String(` + card + `.focus())`)
	p.waitFor("the whole card, focused", wholeText(card))

	assert.Equal(t, "CI queue", p.eval(`document.getElementById('ciqueue-title').textContent`), "a heading that reads as one")
	assert.True(t, strings.HasPrefix(p.eval(`document.querySelector('#ciqueue .hint').textContent`), "What foreman host checks"))

	p.mu.Lock()
	defer p.mu.Unlock()
	assert.Empty(t, p.console, "the page reported errors")
}
