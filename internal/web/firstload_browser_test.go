package web

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// firstLoads is how many fresh browsers load the board in
// TestBrowserFirstLoadShowsTheBuild (issue 48: 2 loads of 4 stayed on
// "connecting…").
const firstLoads = 10

// firstLoadWithin is how soon after the navigation began the first load
// should show the build (issue 48's "Done when"). The test asserts what
// makes it so and cannot race, the build drawn before the document has
// loaded, and reports the times: a clock on a loaded shared machine would
// measure the machine (at a load average of 26 on 2 cores, one page of 10
// took 2.4 s to parse its own scripts).
const firstLoadWithin = 2 * time.Second

// TestBrowserFirstLoadShowsTheBuild loads the board of a build under way in
// 10 fresh headless Chromiums, each with a new empty profile, once each
// and never reloaded, and checks that every first load shows the build:
// the page carries the board it was served with and draws it before the
// document has even finished loading (before DOMContentLoaded, which is
// where a headless capture, --dump-dom or --screenshot, may already look),
// so with no wait on the network after the page itself. Without the board in the page
// the build appears only after the live stream's first event, after the
// document has loaded: the race the issue saw.
func TestBrowserFirstLoadShowsTheBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 10 browsers")
	}
	requireChromium(t)
	lb := startLiveBuild(t, shop(), liveCast...)
	lb.expect("TASKS db")
	lb.actOne(func(string) {})

	var took []time.Duration
	for i := range firstLoads {
		t.Run(fmt.Sprintf("load%d", i+1), func(t *testing.T) {
			p := openPage(t, lb.URL) // a new Chromium, a new empty profile
			p.waitFor("the build", `document.getElementById('build-state').dataset.state === 'running' &&
				document.querySelectorAll('#nodes li').length === 6`)
			assert.Equal(t, "1 of 6", p.text("#merged"))
			assert.Equal(t, "merged", p.eval(node("db")+`.dataset.state`))
			assert.NotEqual(t, "0", p.eval(`String(document.querySelectorAll('#log li').length)`), "the room log")
			// When the page first drew a board, and when the document
			// had loaded: ms since the navigation began.
			shown, err := strconv.ParseFloat(p.eval(`String(performance.getEntriesByName('board-shown')[0]?.startTime ?? -1)`), 64)
			require.NoError(t, err)
			loaded, err := strconv.ParseFloat(p.eval(`String(performance.getEntriesByType('navigation')[0].domContentLoadedEventStart)`), 64)
			require.NoError(t, err)
			require.GreaterOrEqual(t, shown, 0.0, "the page marks when it first showed a board")
			assert.Less(t, shown, loaded, "the build drawn before the document finished loading (it showed at %.0f ms, the document loaded at %.0f ms)", shown, loaded)
			took = append(took, time.Duration(shown*float64(time.Millisecond)))
		})
	}
	slices.Sort(took)
	if len(took) > 0 {
		within := 0
		for _, d := range took {
			if d <= firstLoadWithin {
				within++
			}
		}
		t.Logf("%d first loads showed the build %v to %v after the navigation began (median %v); %d within %v",
			len(took), took[0].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), took[len(took)/2].Round(time.Millisecond),
			within, firstLoadWithin)
	}
}
