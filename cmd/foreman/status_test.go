package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/agentchat/server"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/agents"
	"github.com/agentforeman/foreman/internal/bot"
	"github.com/agentforeman/foreman/internal/web"
	"github.com/agentforeman/foreman/protocol"
)

// boardSource is a running bot as the board sees one, set by hand.
type boardSource struct {
	view    coordinator.View
	stopped atomic.Bool
}

func (s *boardSource) View(context.Context) (coordinator.View, error) {
	if s.stopped.Load() {
		return coordinator.View{}, errors.New("stopped")
	}
	return s.view, nil
}
func (s *boardSource) Health() bot.Health { return bot.Health{Connected: true, Joined: true} }
func (s *boardSource) RoomStats() agentchat.Stats {
	return agentchat.Stats{MessagesSent: 12, Queued: 2}
}

var statusT0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func statusServer(t *testing.T, v coordinator.View) *httptest.Server {
	t.Helper()
	ts, _ := statusServerOf(t, v)
	return ts
}

func statusServerOf(t *testing.T, v coordinator.View) (*httptest.Server, *boardSource) {
	t.Helper()
	s := web.New(web.Options{Now: func() time.Time { return statusT0.Add(90 * time.Second) }})
	s.Observe(&coordinator.Event{Kind: coordinator.KindTick, At: statusT0}, []coordinator.Reply{{At: statusT0,
		Reply: protocol.Escalate("web", protocol.HardBlocker, "missing_dependency: no schema", "RESOLVE web")}})
	s.Named("@b2", "bob")
	s.Named("@b3", "b3") // a name that is its id: shown once
	src := &boardSource{view: v}
	s.Attach(src)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts, src
}

func midBuild() coordinator.View {
	return coordinator.View{
		Build: "shop", At: statusT0, Started: true, Merged: 1,
		Components: []coordinator.ComponentView{
			{Name: "db", State: "merged", BuiltBy: "@b1"},
			{Name: "api", State: "building", Deps: []string{"db"}, Owner: "@b2", Progress: 40, HasProgress: true,
				Next: "timeout", Deadline: statusT0.Add(30 * time.Minute), Audits: "1/3", Branch: "b2/api", Overlaps: []string{"web"}},
			{Name: "web", State: "held", Deps: []string{"api"}, Owner: "@b3", Escalation: "hard-blocker"},
			{Name: "docs", State: "pending", Deps: []string{"web"}, Waits: []string{"web"}},
		},
	}
}

func TestStatusPrintsTheBoard(t *testing.T) {
	ts := statusServer(t, midBuild())
	code, out, errOut := foreman(t, "status", "--board", ts.URL)
	require.Equal(t, 0, code, errOut)
	t.Log("\n" + out)
	assert.NotContains(t, out, "\x1b[", "no colours off a terminal")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	assert.Equal(t, "build shop: running, 1 of 4 merged", lines[0])
	assert.Equal(t, "room: in the room, 2 replies queued, 12 messages sent", lines[1])
	table := strings.Join(lines[3:8], "\n")
	for _, row := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^COMPONENT +STATE +OWNER +PROGRESS +BRANCH +NEXT DEADLINE +WAITS / ESCALATION$`),
		regexp.MustCompile(`(?m)^db +merged +@b1 +done +- +- +-$`),
		// The deadline counts from the server's clock (90s after t0), not this machine's.
		regexp.MustCompile(`(?m)^api +building +bob @b2 +40% +b2/api +timeout in 28m30s +overlaps web; failed audits 1/3$`),
		regexp.MustCompile(`(?m)^web +held +@b3 +- +- +- +ESCALATED hard-blocker: missing_dependency: no schema; RESOLVE web$`),
		regexp.MustCompile(`(?m)^docs +pending +- +- +- +- +waits on web$`),
	} {
		assert.Regexp(t, row, table)
	}
	assert.Contains(t, out, "needs a decision:\n  web: hard-blocker: missing_dependency: no schema; RESOLVE web\n")

	// The columns line up: every row's STATE starts where the header's does.
	col := strings.Index(lines[3], "STATE")
	for _, l := range lines[4:8] {
		assert.NotEqual(t, ' ', rune(l[col]), "%q", l)
		assert.Equal(t, ' ', rune(l[col-1]), "%q", l)
	}

	// --url is the chat server's everywhere: status names its own flag.
	code, _, errOut = foreman(t, "status", "--url", ts.URL)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "--url is the chat server's address, as in every other command; the board's is --board")
}

func TestStatusHeaderSaysPausedHaltedComplete(t *testing.T) {
	for want, edit := range map[string]func(v *coordinator.View){
		"build shop: PAUSED, 1 of 4 merged":                        func(v *coordinator.View) { v.Paused = true },
		"build shop: HALTED by a cycle a -> b -> a, 1 of 4 merged": func(v *coordinator.View) { v.Halted = []string{"a", "b", "a"} },
		"build shop: COMPLETE, 4 of 4 merged": func(v *coordinator.View) {
			v.Complete, v.Merged = true, 4
			for i := range v.Components {
				v.Components[i] = coordinator.ComponentView{Name: v.Components[i].Name, State: "merged"}
			}
		},
	} {
		v := midBuild()
		edit(&v)
		code, out, errOut := foreman(t, "status", "--board", strings.TrimPrefix(statusServer(t, v).URL, "http://"))
		require.Equal(t, 0, code, errOut)
		assert.Equal(t, want, strings.SplitN(out, "\n", 2)[0])
		if v.Paused {
			assert.Contains(t, out, "timeout (paused)")
		}
	}
}

func TestStatusColoursOnATerminal(t *testing.T) {
	ts := statusServer(t, midBuild())
	b, err := fetchBoard(context.Background(), ts.URL)
	require.NoError(t, err)
	var buf bytes.Buffer
	writeStatus(&buf, b, true)
	out := buf.String()
	assert.Contains(t, out, "\x1b[1;31mheld\x1b[0m")
	assert.Contains(t, out, "\x1b[32mmerged\x1b[0m")
	// Padding is outside the escape codes, so the columns still line up.
	assert.Regexp(t, `\x1b\[34mbuilding\x1b\[0m {2}bob @b2`, out)
}

func TestStatusWhenForemanIsNotThere(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	url := ts.URL
	ts.Close()
	code, _, errOut := foreman(t, "status", "--board", url)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "cannot reach foreman at "+url+" (is foreman up, or foreman run, serving http.listen there?)")

	starting := httptest.NewServer(web.New(web.Options{}).Handler())
	defer starting.Close()
	code, out, _ := foreman(t, "status", "--board", starting.URL)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "foreman: foreman is starting")
}

func TestStatusOfAStoppedForeman(t *testing.T) {
	ts, src := statusServerOf(t, midBuild())
	code, _, errOut := foreman(t, "status", "--board", ts.URL)
	require.Equal(t, 0, code, errOut)
	src.stopped.Store(true)
	code, out, _ := foreman(t, "status", "--board", ts.URL)
	assert.Equal(t, 1, code, "the board is not current")
	assert.Contains(t, out, "build shop: running, 1 of 4 merged\nforeman: foreman is not answering (stopped?); this is the last board it gave\n")
	assert.Regexp(t, `(?m)^api +building +bob @b2`, out, "the last board is still printed")
}

// TestRunServesTheBoard runs foreman run with --http against a local room
// and reads the build back with foreman status.
func TestRunServesTheBoard(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	room, err := server.Start(ctx, server.Config{Listen: "127.0.0.1:0", Channels: []string{"#build"}})
	require.NoError(t, err)
	defer room.Close()

	dir := t.TempDir()
	cfg := filepath.Join(dir, "foreman.yaml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, `server:
  url: %s
  channel: "#build"
  identity: %s
  rate_limit: 20ms
build:
  name: shop
  components:
    - name: db
    - name: api
      depends_on: [db]
journal:
  path: %s
`, room.URL(), filepath.Join(dir, "id.json"), filepath.Join(dir, "journal")), 0o600))

	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"run", cfg, "--http", "127.0.0.1:0", "--log-format", "json"}, &stdout, &stderr)
	}()
	serving := regexp.MustCompile(`"url":"(http://127\.0\.0\.1:\d+/)"`)
	var url string
	require.Eventually(t, func() bool {
		m := serving.FindStringSubmatch(stderr.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	}, 10*time.Second, 10*time.Millisecond, "no board URL in the log: %s", stderr.String())

	require.Eventually(t, func() bool {
		resp, err := http.Get(url + "healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond, "never healthy: %s", stderr.String())

	code, out, errOut := foreman(t, "status", "--board", url)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "build shop: running, 0 of 2 merged")
	assert.Regexp(t, `(?m)^db +pending +- +- +- +- +claimable$`, out)
	assert.Regexp(t, `(?m)^api +pending +- +- +- +- +waits on db$`, out)

	require.NoError(t, syscall.Kill(syscall.Getpid(), syscall.SIGINT))
	select {
	case code := <-done:
		assert.Equal(t, 0, code, stderr.String())
	case <-time.After(15 * time.Second):
		t.Fatal("run did not stop on SIGINT")
	}
	_, err = http.Get(url + "healthz")
	assert.Error(t, err, "the board stops with the bot")
}

// TestDemoServesTheBoard runs foreman demo with --http: the board's URL is
// printed first, the board follows the demo's bot, and it stops with the
// demo.
func TestDemoServesTheBoard(t *testing.T) {
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"demo", "--http", "127.0.0.1:0", "--quiet", "--no-color", "--minute", "50ms"}, &stdout, &stderr)
	}()
	printed := regexp.MustCompile(`(?m)^board: (http://127\.0\.0\.1:\d+/)$`)
	var url string
	require.Eventually(t, func() bool {
		m := printed.FindStringSubmatch(stdout.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	}, 10*time.Second, 10*time.Millisecond, "no board URL printed: %s %s", stdout.String(), stderr.String())

	require.Eventually(t, func() bool {
		b, err := fetchBoard(context.Background(), url)
		return err == nil && b.View != nil && b.View.Build == "bookshop"
	}, 20*time.Second, 20*time.Millisecond, "the board never showed the demo's build")

	require.NoError(t, syscall.Kill(syscall.Getpid(), syscall.SIGINT))
	select {
	case code := <-done:
		assert.Equal(t, 0, code, stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("demo did not stop on SIGINT")
	}
	_, err := http.Get(url + "healthz")
	assert.Error(t, err, "the board stops with the demo")
}

// foreman status lists the processes of foreman up's agents under the
// components.
func TestStatusShowsTheAgents(t *testing.T) {
	var out strings.Builder
	writeStatus(&out, &web.Board{View: func() *coordinator.View { v := midBuild(); return &v }(), Agents: []agents.Status{
		{Name: "b1", Role: "builder", State: agents.Running, Pid: 4242, Restarts: 1, LastExit: "signal: killed", Log: "/w/.foreman/agents/b1/agent.log"},
		{Name: "b2", Role: "builder", State: agents.Stopped, Restarts: 4, LastExit: "exit status 127", Reason: "exited 5 times in a row", Log: "/w/b2.log"},
	}}, false)
	assert.Regexp(t, `(?m)^AGENT +ROLE +STATE +PID +RESTARTS +LAST EXIT +WHY +LOG$`, out.String())
	assert.Regexp(t, `(?m)^b1 +builder +running +4242 +1 +signal: killed +- +/w/.foreman/agents/b1/agent.log$`, out.String())
	assert.Regexp(t, `(?m)^b2 +builder +stopped +- +4 +exit status 127 +exited 5 times in a row +/w/b2.log$`, out.String())
}
