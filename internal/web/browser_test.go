package web

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/coordinator"
)

// Environment of the browser test. They do not start with FOREMAN_
// because foreman's configuration refuses FOREMAN_* variables that name no
// key, and the CLI's tests load it.
const (
	envChromium      = "FOREMANTEST_CHROMIUM"        // the browser binary, if not on PATH
	envScreenshotDir = "FOREMANTEST_SCREENSHOT_DIR"  // also keep the screenshots here
	envNeedBrowser   = "FOREMANTEST_REQUIRE_BROWSER" // set (CI): fail rather than skip without a browser
)

func chromium() string {
	if p := os.Getenv(envChromium); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// windowWidth is the width of the window the board must fit: a laptop's
// browser, not maximised (issue 12).
const windowWidth = 1400

// page is the board in a headless Chromium.
type page struct {
	t   *testing.T
	ctx context.Context

	mu      sync.Mutex
	console []string // errors and exceptions the page reported
}

// requireChromium skips the test, saying why, when there is no browser.
func requireChromium(t *testing.T) string {
	t.Helper()
	bin := chromium()
	if bin == "" && os.Getenv(envNeedBrowser) != "" {
		t.Fatalf("no Chromium found, and %s is set", envNeedBrowser)
	}
	if bin == "" {
		t.Skipf("no Chromium found (on PATH as chromium, chromium-browser or google-chrome, or in %s): "+
			"skipping the browser test; on Debian: apt-get install chromium", envChromium)
	}
	return bin
}

func openPage(t *testing.T, url string) *page {
	t.Helper()
	bin := requireChromium(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// The background-networking flags matter: without them Chromium calls
	// home at start, which a machine with no network refuses.
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(windowWidth, 900),
	)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(cancelBrowser)

	p := &page{t: t, ctx: bctx}
	// The first Run starts the browser, and the browser lives as long as
	// the context of that call: so no timeout here.
	require.NoError(t, chromedp.Do(bctx), "starting %s", bin)
	go func() {
		for m, err := range chromedp.Console(bctx) {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == "error" || m.Type == "warning" {
				p.mu.Lock()
				p.console = append(p.console, fmt.Sprintf("%s: %s", m.Type, m.Text))
				p.mu.Unlock()
			}
		}
	}()
	p.do(chromedp.Navigate(url))
	require.Equal(t, fmt.Sprint(windowWidth), p.eval(`String(window.innerWidth)`), "the page is as wide as the window")
	return p
}

func (p *page) do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, liveTimeout)
	defer cancel()
	require.NoError(p.t, chromedp.Do(ctx, actions...))
}

// waitFor polls a JavaScript condition in the page until it holds. When
// it never does, the test fails with what the page says and a screenshot
// of it, failed.png.
func (p *page) waitFor(what, js string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, liveTimeout+5*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(liveTimeout), chromedp.WithPollingInterval(50*time.Millisecond)))
	if err != nil {
		p.t.Errorf("the page never showed %s (%v); the page says:\n%s", what, err, p.text("body"))
		p.screenshot("failed.png")
		p.t.FailNow()
	}
}

func (p *page) text(sel string) string {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		return "(cannot read " + sel + ": " + err.Error() + ")"
	}
	return s
}

func (p *page) eval(js string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	require.NoError(p.t, err, js)
	return s
}

// evalAsync is eval of an expression whose value is a promise: its
// settled value.
func (p *page) evalAsync(js string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
	require.NoError(p.t, err, js)
	return s
}

// node is a JavaScript expression for a component's card.
func node(name string) string {
	return fmt.Sprintf("document.querySelector('#nodes li[data-name=%q]')", name)
}

func (p *page) waitState(name, state string) {
	p.t.Helper()
	p.waitFor(name+" "+state, fmt.Sprintf("%s?.dataset.state === %q", node(name), state))
}

// screenshot saves what the window shows as a PNG with the test's
// artifacts (kept with go test -artifacts), and in
// $FOREMANTEST_SCREENSHOT_DIR when set. The window, not the whole page:
// what is cut off should look cut off.
func (p *page) screenshot(name string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, liveTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(p.t, err)
	require.True(p.t, strings.HasPrefix(string(png), "\x89PNG"), "a PNG")
	dirs := []string{p.t.ArtifactDir()}
	if d := os.Getenv(envScreenshotDir); d != "" {
		require.NoError(p.t, os.MkdirAll(d, 0o755))
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		path := filepath.Join(d, name)
		require.NoError(p.t, os.WriteFile(path, png, 0o644))
		p.t.Logf("screenshot: %s", path)
	}
}

// cutOff lists the cards not wholly in view: outside the graph's panel
// (which would need scrolling to see) or outside the window.
const cutOff = `JSON.stringify([...document.querySelectorAll('#nodes li')].filter((li) => {
  const g = document.getElementById('graph').getBoundingClientRect();
  const r = li.getBoundingClientRect();
  return r.left < g.left || r.right > g.right || r.top < g.top || r.bottom > g.bottom ||
    r.right > window.innerWidth || r.bottom > window.innerHeight;
}).map((li) => li.dataset.name))`

// requireAllCardsInView checks that the graph fits its panel.
func (p *page) requireAllCardsInView() {
	p.t.Helper()
	p.waitFor("a card laid out", `document.querySelectorAll('#nodes li').length > 0`)
	assert.Equal(p.t, "[]", p.eval(cutOff), "cards cut off at %dpx (zoom %s)", windowWidth, p.eval(`document.getElementById('canvas').style.zoom`))
}

// newestInView says whether the room log's newest line is wholly in view:
// inside the log's box and the window.
const newestInView = `(() => {
  const log = document.getElementById('log');
  const last = log.lastElementChild;
  if (!last) return false;
  const box = log.getBoundingClientRect();
  const r = last.getBoundingClientRect();
  return r.top >= box.top && r.bottom <= box.bottom + 1 && r.bottom <= window.innerHeight;
})()`

// contractTime matches a time since the build started, as foreman demo
// writes it: mm:ss, or h:mm:ss from the first hour on.
const contractTime = `^(\d+:)?\d\d:\d\d$`

// TestBrowserShowsTheBuild loads the board in a real headless Chromium
// while a scripted team builds, and checks that the page follows: db goes
// pending, building (with its progress), review, merged; mid-build a held
// component and its escalation stand out; the page ends at COMPLETE. It
// takes a screenshot mid-build and one at the end.
func TestBrowserShowsTheBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	requireChromium(t)
	lb := startLiveBuild(t, shop(), liveCast...)
	lb.expect("TASKS db")
	p := openPage(t, lb.URL)

	p.waitState("db", "pending")
	p.waitFor("the build running", `document.getElementById('build-state').dataset.state === 'running'`)
	p.waitFor("the board live", `document.getElementById('live').dataset.live === 'yes'`)
	assert.Equal(t, "shop", p.text("#build-name"))
	assert.Contains(t, p.text(`#nodes li[data-name="db"]`), "claimable")
	assert.Contains(t, p.text(`#nodes li[data-name="cart"]`), "waits on auth, catalog")
	assert.Equal(t, "6", p.eval(`String(document.querySelectorAll('#nodes li').length)`))
	assert.Equal(t, "7", p.eval(`String(document.querySelectorAll('#edge-paths path').length)`), "one arrow per dependency")

	lb.actOne(func(state string) {
		switch state {
		case "building":
			p.waitState("db", state)
			// Names, not ids; the id on hover.
			assert.Equal(t, "owner b1", p.text(`#nodes li[data-name="db"] .owner`))
			assert.Equal(t, "b1 · "+lb.id("b1"), p.eval(`document.querySelector('#nodes li[data-name="db"] .owner .id').title`))
			p.waitFor("ACK in the room log", `[...document.querySelectorAll('#log li.said .text')].some(e => e.textContent === 'ACK db @b1')`)
			claim := `[...document.querySelectorAll('#log li.heard')].find(li => li.querySelector('.text').textContent === 'CLAIM db').querySelector('.who')`
			assert.Equal(t, "b1", p.eval(claim+`.textContent`))
			assert.Equal(t, "b1 · "+lb.id("b1"), p.eval(claim+`.title`))
			assert.Equal(t, "b1 · "+lb.id("b1"), p.eval(`[...document.querySelectorAll('#log li.said .text')].find(e => e.textContent === 'ACK db @b1').querySelector('.id').title`))
			// Contract time, since the build started.
			assert.Equal(t, "00:00", p.eval(`document.querySelector('#log time').textContent`), "TASKS, at the start")
			var times []string
			require.NoError(t, json.Unmarshal([]byte(p.eval(`JSON.stringify([...document.querySelectorAll('#log time')].map(t => t.textContent))`)), &times))
			for _, tm := range times {
				assert.Regexp(t, contractTime, tm)
			}
			assert.Regexp(t, contractTime, p.text("#elapsed"))
			assert.Contains(t, p.eval(`document.querySelector('#log time').title`), "local time")
			// Who is in the room, with full ids to read and copy.
			p.waitFor("b1 in the member list, owning db", `document.querySelector('#members li[data-member="`+lb.id("b1")+`"] .what')?.textContent === 'owns db'`)
			assert.Equal(t, lb.id("b1"), p.text(`#members li[data-member="`+lb.id("b1")+`"] .full-id`), "the whole id, as text")
			assert.Equal(t, "b1", p.text(`#members li[data-member="`+lb.id("b1")+`"] .who`))
			assert.Contains(t, p.text("#members-count"), "(", "a count")
			p.do(chromedp.Click(`#members li[data-member="` + lb.id("b1") + `"] button.copy`))
			p.waitFor("the id copied", `document.getElementById('copied').textContent === 'copied `+lb.id("b1")+`'`)
			p.do(chromedp.Click(`#nodes li[data-name="db"] .owner .id`))
			p.waitFor("a name on the board copies its id", `document.getElementById('copied').textContent === 'copied `+lb.id("b1")+`'`)
		case "progress":
			p.waitFor("db at 60%", node("db")+`?.dataset.progress === "60"`)
			assert.Contains(t, p.text(`#nodes li[data-name="db"]`), "60%")
			assert.Regexp(t, `timeout in \d+:\d\d`, p.text(`#nodes li[data-name="db"] .deadline`), "the check-in deadline counts down")
		default:
			p.waitState("db", state)
		}
	})
	p.waitFor("ACK in the room log", `[...document.querySelectorAll('#log li.said .text')].some(e => e.textContent.startsWith('ACK db '))`)
	p.waitFor("the claim in the room log", `[...document.querySelectorAll('#log li.heard .text')].some(e => e.textContent === 'CLAIM db')`)

	lb.actTwo()
	p.waitState("catalog", "held")
	p.waitState("auth", "review")
	p.waitFor("docs at 45%", node("docs")+`?.dataset.progress === "45"`)
	p.waitFor("docs overlapping auth", node("docs")+`?.dataset.overlaps === "auth"`)
	assert.Contains(t, p.text(`#nodes li[data-name="docs"] .owner`), "b3/docs", "where the work in progress is")
	assert.Equal(t, "b3/docs", p.eval(node("docs")+`.dataset.branch`))
	assert.Contains(t, p.text(`#nodes li[data-name="docs"] .note`), "overlaps auth")
	p.waitFor("the attention panel", `!document.getElementById('attention').hidden`)
	attention := p.text("#attention")
	assert.Contains(t, attention, "Needs a decision")
	assert.Contains(t, attention, "catalog (held)")
	assert.Contains(t, attention, "hard-blocker: missing_dependency: the product schema was never specified")
	held := p.text(`#nodes li[data-name="catalog"]`)
	assert.Contains(t, strings.ToLower(held), "held", "the state is written, not only coloured")
	assert.Contains(t, held, "hard-blocker")
	assert.Equal(t, "1 of 6", p.text("#merged"))
	assert.Contains(t, p.text("#next-deadline"), "in ", "the next deadline counts down")
	assert.Contains(t, attention, "(from @b2, who let catalog go)", "ids in text by name")
	p.requireAllCardsInView()
	p.waitFor("the newest log line in view", newestInView)
	p.screenshot("board-mid-build.png")

	// Enough lines that the log scrolls; the reader scrolls up to read,
	// and new lines must not pull the log from under them.
	var chat []string
	for i := range 40 {
		chat = append(chat, fmt.Sprintf("note %d: the API reference grows", i+1))
	}
	lb.say("b3", chat...)
	p.waitFor("the chat in the room log", `[...document.querySelectorAll('#log .text')].some(e => e.textContent === 'note 40: the API reference grows')`)
	p.waitFor("the newest log line in view", newestInView)
	p.eval(`String(document.getElementById('log').scrollTop = 0)`)
	p.waitFor("the log left to the reader", `document.getElementById('log').dataset.follow === 'no'`)

	lb.actThree()
	p.waitFor("COMPLETE", `document.getElementById('build-state').textContent === 'COMPLETE'`)
	for _, c := range shop() {
		p.waitState(c.Name, "merged")
	}
	p.waitFor("the attention panel gone", `document.getElementById('attention').hidden`)
	assert.Equal(t, "6 of 6", p.text("#merged"))
	p.waitFor("COMPLETE in the room log", `[...document.querySelectorAll('#log li.said .text')].some(e => e.textContent === 'COMPLETE shop')`)
	// A host that landed db: its MERGED line links to db's receipt.
	receipt := "db-0123456789ab.receipt.json"
	require.NoError(t, os.WriteFile(filepath.Join(lb.logs, receipt), []byte(`{"payloadType":"application/vnd.in-toto+json"}`+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(lb.logs, "queue.json"), []byte(`{"at":"2026-03-01T09:00:00Z","target":"main","max_parallel":1,
		"landed":[{"c":"db","commit":"0123456789abcdef0123456789abcdef01234567","receipt":true,"file":"`+receipt+`","at":"2026-03-01T09:00:00Z"}]}`), 0o644))
	p.waitFor("db's MERGED line linked to its receipt", `document.querySelector('#log li[data-merged="db"] a.receipt')?.getAttribute('href') === 'ci/logs/`+receipt+`'`)
	assert.Equal(t, "200 application/json", p.evalAsync(`fetch('ci/logs/`+receipt+`').then(r => r.status + ' ' + r.headers.get('Content-Type'))`))
	assert.Equal(t, "0", p.eval(`String(document.getElementById('log').scrollTop)`), "the log stayed where the reader left it")
	p.waitFor("the way to the newest lines", `!document.getElementById('log-newest').hidden`)
	p.screenshot("board-complete-scrolled-up.png")
	p.do(chromedp.Click("#log-newest"))
	p.waitFor("the newest log line in view", newestInView)
	p.waitFor("the log following again", `document.getElementById('log').dataset.follow === 'yes'`)
	p.requireAllCardsInView()
	p.screenshot("board-complete.png")

	p.mu.Lock()
	defer p.mu.Unlock()
	assert.Empty(t, p.console, "the page reported errors (a script error, or a blocked resource)")
}

// TestBrowserShowsAHaltedBuild checks the page of a build halted by a
// dependency cycle: the header says so, the cycle is the decision to make,
// and the edge that closes the cycle is drawn (back, dashed).
func TestBrowserShowsAHaltedBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	requireChromium(t)
	lb := startLiveBuild(t, []coordinator.Component{
		{Name: "db"},
		{Name: "api", Deps: []string{"db", "web"}},
		{Name: "web", Deps: []string{"api"}},
		{Name: "docs", Deps: []string{"db"}},
	}, "operator")
	lb.expect("ESCALATE build cycle")
	p := openPage(t, lb.URL)
	p.waitFor("the build halted", `document.getElementById('build-state').dataset.state === 'halted'`)
	assert.Contains(t, p.text("#build-state"), "HALTED by a cycle")
	p.waitFor("the attention panel", `!document.getElementById('attention').hidden`)
	assert.Contains(t, p.text("#attention"), "build shop — cycle")
	assert.Equal(t, "1", p.eval(`String(document.querySelectorAll('#edge-paths path.back').length)`))
	p.requireAllCardsInView()
	p.screenshot("board-halted.png")

	lb.say("operator", "UNDEPEND api web")
	lb.expect("TASKS db")
	p.waitFor("the build running again", `document.getElementById('build-state').dataset.state === 'running'`)
	p.waitFor("no back edge", `document.querySelectorAll('#edge-paths path.back').length === 0`)
	p.waitFor("the attention panel gone", `document.getElementById('attention').hidden`)
}

// TestBrowserUsesThePanelAndWrapsLongReasons: a small graph grows to use
// its panel, centred in it, and a long reason with no place to break (a
// URL) wraps inside the attention panel and on its card instead of running
// out of them.
func TestBrowserUsesThePanelAndWrapsLongReasons(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	requireChromium(t)
	lb := startLiveBuild(t, []coordinator.Component{{Name: "db"}, {Name: "api", Deps: []string{"db"}}}, "b1")
	lb.expect("TASKS db")
	lb.say("b1", "CLAIM db")
	lb.expect("ACK db")
	long := "missing_dependency: see https://example.test/" + strings.Repeat("x", 180)
	lb.say("b1", "ABORT db "+long)
	lb.expect("ESCALATE db hard-blocker")
	p := openPage(t, lb.URL)
	p.waitFor("the attention panel", `!document.getElementById('attention').hidden`)
	p.waitState("db", "held")

	zoom, err := strconv.ParseFloat(p.eval(`document.getElementById('canvas').style.zoom`), 64)
	require.NoError(t, err)
	assert.Greater(t, zoom, 1.0, "two cards in a wide panel are drawn larger")
	p.requireAllCardsInView()
	assert.Equal(t, "true", p.eval(`(() => {
  const g = document.getElementById('graph').getBoundingClientRect();
  const c = document.getElementById('canvas').getBoundingClientRect();
  return String(Math.abs((c.left - g.left) - (g.right - c.right)) < 4);
})()`), "centred across")

	assert.Equal(t, "true", p.eval(`(() => {
  const a = document.querySelector('#attention-list li');
  return String(a.scrollWidth <= a.clientWidth && a.getBoundingClientRect().right <= document.getElementById('attention').getBoundingClientRect().right);
})()`), "the reason wraps in the attention panel")
	assert.Equal(t, "true", p.eval(`(() => {
  const n = document.querySelector('#nodes li[data-name="db"] .note');
  return String(n.scrollWidth <= n.clientWidth);
})()`), "and on its card")
	p.screenshot("board-small-long-reason.png")
}
