package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/journal"
)

// upWait bounds every wait of these tests: generous, for a loaded machine.
const upWait = time.Minute

// upWorld is a directory with what foreman up needs: foreman's key, an
// operator's, a bare repository with a first commit on main, and configs.
type upWorld struct {
	t        *testing.T
	dir      string
	operator *agentchat.Identity
}

func newUpWorld(t *testing.T) *upWorld {
	t.Helper()
	dir := t.TempDir()
	w := &upWorld{t: t, dir: dir}
	fid, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	require.NoError(t, fid.Save(filepath.Join(dir, ".foreman", "identity.json")))
	w.operator, err = agentchat.NewIdentity("olga")
	require.NoError(t, err)
	require.NoError(t, w.operator.Save(filepath.Join(dir, ".foreman", "olga.json")))
	_, err = gitrepo.Init(context.Background(), filepath.Join(dir, "shop.git"), "main", true)
	require.NoError(t, err)
	return w
}

// freeAddr is an address nothing listens on (a moment ago).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// config writes a config named name: the room at room, the board at
// board, the journal and the host's repository as given ("" for none),
// and more YAML after.
func (w *upWorld) config(name, room, board, journal, repo, more string) string {
	w.t.Helper()
	host := ""
	if repo != "" {
		host = fmt.Sprintf("rules:\n  ci_gating: on\n  merge: external\nhost:\n  repo: %s\n  ledger: %s-host/ledger.jsonl\n  logs: %s-host/logs\n  work: %s-host/work\n", repo, name, name, name)
	}
	return writeFile(w.t, w.dir, name+".yaml", fmt.Sprintf(`server:
  url: ws://%s
  rate_limit: 5ms
build:
  name: shop
  components:
    - name: db
    - name: api
      depends_on: [db]
roles:
  operators: [%q]
journal:
  path: %s
http:
  listen: "%s"
%s%s`, room, w.operator.AgentID(), journal, board, host, more))
}

// startUp runs foreman up in this process until the test ends, and waits
// until it says everything is up.
func startUp(t *testing.T, args ...string) (stdout, stderr *syncBuffer, done <-chan int, stop func()) {
	t.Helper()
	stdout, stderr, done, stop = startAgent(t, strings.NewReader(""), append([]string{"up"}, args...)...)
	deadline := time.After(upWait)
	for !strings.Contains(stdout.String(), "Ctrl-C stops it all.") {
		select {
		case code := <-done:
			t.Fatalf("foreman up ended (%d) before it was up:\n%s\n%s", code, stdout, stderr)
		case <-deadline:
			t.Fatalf("foreman up never said it was up:\n%s\n%s", stdout, stderr)
		case <-time.After(10 * time.Millisecond):
		}
	}
	return stdout, stderr, done, stop
}

// notHalfStarted checks that a foreman up that refused left nothing
// behind: its ports free, its journal and repository free to take.
func (w *upWorld) notHalfStarted(addrs []string, journalDir string, repo string) {
	t := w.t
	t.Helper()
	for _, a := range addrs {
		ln, err := net.Listen("tcp", a)
		if assert.NoError(t, err, "%s is still bound", a) {
			ln.Close()
		}
	}
	if journalDir != "" {
		j, err := journal.Open(journalDir, journal.Options{})
		if assert.NoError(t, err, "the journal is still locked") {
			require.NoError(t, j.Close())
		}
	}
	if repo != "" {
		r, err := gitrepo.Open(context.Background(), repo)
		require.NoError(t, err)
		f, err := os.OpenFile(filepath.Join(r.GitDir(), "foreman-host.lock"), os.O_RDWR|os.O_CREATE, 0o644)
		require.NoError(t, err)
		f.Close()
	}
}

// oneLine asserts that a refusal is exactly one line, foreman's, holding
// want.
func oneLine(t *testing.T, code int, stderr, want string) {
	t.Helper()
	assert.Equal(t, 1, code)
	assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
	assert.True(t, strings.HasPrefix(stderr, "foreman: "), stderr)
	assert.Contains(t, stderr, want)
}

// Each bad input stops foreman up with one line naming what to change,
// before anything has joined the room, and leaves nothing started.
func TestUpRefusesBadInputInOneLine(t *testing.T) {
	w := newUpWorld(t)
	notRepo := filepath.Join(w.dir, "plain")
	require.NoError(t, os.MkdirAll(notRepo, 0o755))

	t.Run("room port in use", func(t *testing.T) {
		room, board := held(t), freeAddr(t)
		code, _, errOut := foreman(t, "up", w.config("taken-room", room, board, "j1", "shop.git", ""))
		oneLine(t, code, errOut, "server.url in "+filepath.Join(w.dir, "taken-room.yaml")+" ws://"+room+": cannot serve the room on "+room+": the port is in use")
		assert.Contains(t, errOut, "--join")
		w.notHalfStarted([]string{board}, filepath.Join(w.dir, "j1"), filepath.Join(w.dir, "shop.git"))
	})
	t.Run("board port in use", func(t *testing.T) {
		room, board := freeAddr(t), held(t)
		code, _, errOut := foreman(t, "up", w.config("taken-board", room, board, "j2", "shop.git", ""))
		oneLine(t, code, errOut, "http.listen in "+filepath.Join(w.dir, "taken-board.yaml")+" "+board+": cannot serve the board: the port is in use")
		w.notHalfStarted([]string{room}, filepath.Join(w.dir, "j2"), filepath.Join(w.dir, "shop.git"))
	})
	t.Run("host.repo not a repository", func(t *testing.T) {
		room, board := freeAddr(t), freeAddr(t)
		code, _, errOut := foreman(t, "up", w.config("not-repo", room, board, "j3", "plain", ""))
		oneLine(t, code, errOut, "foreman: host.repo: "+notRepo+": not a git repository")
		w.notHalfStarted([]string{room, board}, filepath.Join(w.dir, "j3"), "")
	})
	t.Run("no operator", func(t *testing.T) {
		path := w.config("no-operator", freeAddr(t), freeAddr(t), "j4", "", "")
		text, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(text), fmt.Sprintf("operators: [%q]", w.operator.AgentID()), "operators: []", 1)), 0o644))
		code, _, errOut := foreman(t, "up", path)
		oneLine(t, code, errOut, "foreman: roles.operators: empty, so nobody could settle what foreman escalates")
		assert.NoDirExists(t, filepath.Join(w.dir, "j4"), "refused before the journal was made")
	})
	t.Run("no config", func(t *testing.T) {
		t.Chdir(t.TempDir())
		code, _, errOut := foreman(t, "up", "--listen", held(t))
		oneLine(t, code, errOut, "foreman: no config file: name one (foreman up CONFIG, or -c)")
	})
}

// A second foreman up of the same build is refused, whatever it shares with
// the first: the same config (its journal is named, not its ports), the
// journal alone, or the repository alone. The first goes on serving.
func TestSecondUpIsRefused(t *testing.T) {
	w := newUpWorld(t)
	room, board := freeAddr(t), freeAddr(t)
	first := w.config("first", room, board, "journal", "shop.git", "")
	_, stderr, done, stop := startUp(t, first)

	code, _, errOut := foreman(t, "up", first)
	oneLine(t, code, errOut, "foreman: journal.path: "+filepath.Join(w.dir, "journal")+": the journal is in use by another foreman")
	code, _, errOut = foreman(t, "up", first, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	oneLine(t, code, errOut, "foreman: journal.path: "+filepath.Join(w.dir, "journal")+": the journal is in use by another foreman")

	code, _, errOut = foreman(t, "up", w.config("same-journal", freeAddr(t), freeAddr(t), "journal", "", ""))
	oneLine(t, code, errOut, "foreman: journal.path: "+filepath.Join(w.dir, "journal")+": the journal is in use by another foreman")

	second := w.config("same-repo", freeAddr(t), freeAddr(t), "journal2", "shop.git", "")
	code, _, errOut = foreman(t, "up", second)
	oneLine(t, code, errOut, fmt.Sprintf("foreman: host.repo: %s is in use by another foreman host (process %d holds ", filepath.Join(w.dir, "shop.git"), os.Getpid()))
	j, err := journal.Open(filepath.Join(w.dir, "journal2"), journal.Options{})
	require.NoError(t, err, "the refused one let its journal go")
	require.NoError(t, j.Close())

	resp, err := http.Get("http://" + board + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the first is still in the room")
	stop()
	assert.Equal(t, 0, <-done, stderr.String())

	// Once the first has stopped, the second may start.
	_, stderr, done, stop = startUp(t, second)
	stop()
	assert.Equal(t, 0, <-done, stderr.String())
}

// foreman up serves the room, coordinates, runs the host (its key made,
// its id put in roles.ci and roles.merger for the run, and said), and the
// board; it says how to join with absolute paths; a scripted builder and
// an auditor finish the build on real git; Ctrl-C stops the host, then
// foreman, then the room, and a second start resumes the same build.
func TestUpRunsARealBuild(t *testing.T) {
	w := newUpWorld(t)
	config := w.config("foreman", "127.0.0.1:0", "127.0.0.1:0", "journal", "shop.git", "")
	stdout, stderr, done, stop := startUp(t, config)
	out := stdout.String()
	t.Log("\n" + out)

	url := regexp.MustCompile(`(?m)^foreman up: build shop \(2 components\) in #build at (ws://127\.0\.0\.1:\d+) \(served here\)$`).FindStringSubmatch(out)
	require.NotNil(t, url, out)
	hostKey := filepath.Join(w.dir, ".foreman", "host.json")
	hid, err := agentchat.LoadIdentity(hostKey)
	require.NoError(t, err, "the host's key is made on first use")
	assert.Contains(t, out, "  host     "+hid.AgentID()+", checking "+filepath.Join(w.dir, "shop.git")+" (target main; checks: none)\n")
	assert.Contains(t, out, "its key "+hostKey+" was created now\n")
	assert.Contains(t, out, "its id is in roles.ci and roles.merger for this run; list it there in "+config+" to keep it")
	assert.Regexp(t, `(?m)^  board    http://127\.0\.0\.1:\d+/$`, out)
	assert.Contains(t, out, "Others find the room with: export FOREMAN_SERVER_URL="+url[1]+"\n")
	assert.Contains(t, out, "You, the operator (olga), in the room:\n  foreman agent --role chat --identity "+filepath.Join(w.dir, ".foreman", "olga.json")+" --url "+url[1]+" "+config+"\n")
	assert.Contains(t, out, `"foreman-agent1": {`, "an entry, and a key, per agent")
	assert.Contains(t, out, `"args": [`+"\n        \"mcp\",\n        \"--identity\",\n        \""+filepath.Join(w.dir, ".foreman", "agent1.json")+"\",\n        \"--name\",\n        \"agent1\",\n        \"--url\",\n        \""+url[1]+"\",\n        \""+config+"\"\n      ]")
	assert.Contains(t, out, "foreman mcp --print-config --agents NAME,NAME,...")

	repo := filepath.Join(w.dir, "shop.git")
	_, bstderr, bdone, bstop := startAgent(t, strings.NewReader(""), "agent", config, "--url", url[1], "--role", "builder", "--name", "b1",
		"--minute", "100ms", "--repo", repo, "--rate-limit", "5ms")
	aud := roomPeer(t, url[1], "aud")
	watch := roomPeer(t, url[1], "watch")
	for _, c := range []string{"db", "api"} {
		line := aud.await("REVIEW " + c + " ")
		require.NotEmpty(t, line)
		aud.say("AUDIT " + c + " PASS")
		watch.await("MERGED " + c)
	}
	watch.await("COMPLETE shop")
	r, err := gitrepo.Open(context.Background(), repo)
	require.NoError(t, err)
	files, err := r.Git(context.Background(), "ls-tree", "-r", "--name-only", "main")
	require.NoError(t, err)
	assert.Subset(t, strings.Fields(files), []string{"api/api.txt", "db/db.txt"}, "main holds every component")
	bstop()
	<-bdone
	_ = bstderr

	stop()
	require.Equal(t, 0, <-done, stderr.String())
	logs := stderr.String()
	host := strings.Index(logs, "the host has stopped")
	bot := strings.Index(logs, "foreman has stopped: its journal is flushed")
	room := strings.Index(logs, "the room is closed")
	assert.True(t, host >= 0 && host < bot && bot < room, "the host stops first, then foreman, then the room:\n%s", logs)

	stdout, stderr, done, stop = startUp(t, config)
	assert.Contains(t, stdout.String(), "foreman up: build shop (2 components)")
	assert.NotContains(t, stdout.String(), "was created now", "the host's key is kept")
	assert.Contains(t, stderr.String(), "resuming the build from the journal")
	// The room stopped in order with foreman, and starts again with its
	// history: nothing can have been said that foreman did not hear, and
	// it does not say it may have missed lines.
	url = regexp.MustCompile(`(?m)^foreman up: build shop \(2 components\) in #build at (ws://127\.0\.0\.1:\d+) \(served here\)$`).FindStringSubmatch(stdout.String())
	require.NotNil(t, url, stdout.String())
	late := roomPeer(t, url[1], "late")
	late.say("PROGRESS") // its ERROR marks where everything foreman said before it ends
	var said []string
	for l := late.await(""); !strings.HasPrefix(l, "ERROR "+late.id); l = late.await("") {
		said = append(said, l)
	}
	assert.Contains(t, said, "COMPLETE shop", "the room kept its history over the restart")
	for _, l := range said {
		assert.NotContains(t, l, "may have missed lines", "a false alarm: the room and foreman stopped together")
	}
	stop()
	require.Equal(t, 0, <-done, stderr.String())

	// A build in the journal, and the room's port taken: one line, and no
	// word of resuming a build that will not run; the room's history is
	// left for the start that can serve it.
	code, _, errOut := foreman(t, "up", config, "--listen", held(t))
	oneLine(t, code, errOut, "cannot serve the room")
	assert.FileExists(t, filepath.Join(w.dir, "journal-room.json"))
}

// --listen serves the room elsewhere than server.url says, and every part
// (foreman, the host) and every command printed goes there; --join with
// --listen is refused.
func TestUpServesWhereListenSays(t *testing.T) {
	w := newUpWorld(t)
	config := w.config("elsewhere", "127.0.0.1:1", "", "journal", "shop.git", "")
	addr := freeAddr(t)
	stdout, stderr, done, stop := startUp(t, config, "--listen", addr)
	out := stdout.String()
	assert.Contains(t, out, "in #build at ws://"+addr+" (served here)\n", "foreman and the host are in that room: up said so once both were")
	assert.Contains(t, out, "export FOREMAN_SERVER_URL=ws://"+addr+"\n")
	assert.Contains(t, out, "--url ws://"+addr+" "+config+"\n")
	assert.Contains(t, out, "  board    off (http.listen is \"\")\n")
	stop()
	require.Equal(t, 0, <-done, stderr.String())

	code, _, errOut := foreman(t, "up", config, "--listen", addr, "--join")
	oneLine(t, code, errOut, "foreman: --listen and --join")
}

// When foreman up's host fails, up says so and stops the rest: foreman,
// the board and the room do not run on without the host that lands their
// work (a planted bug that kept them running went unseen, issue 48). The
// host fails as a real one may: another program keeps taking its key.
// up's log beside its summary is for people, not JSON lines, even when
// stderr is not a terminal.
func TestUpStopsWhenItsHostFails(t *testing.T) {
	w := newUpWorld(t)
	config := w.config("foreman", "127.0.0.1:0", "127.0.0.1:0", "journal", "shop.git", "")
	stdout, stderr, done, _ := startUp(t, config)
	url := regexp.MustCompile(`(?m)^foreman up: build shop \(2 components\) in #build at (ws://127\.0\.0\.1:\d+) \(served here\)$`).FindStringSubmatch(stdout.String())
	require.NotNil(t, url, stdout.String())
	hid, err := agentchat.LoadIdentity(filepath.Join(w.dir, ".foreman", "host.json"))
	require.NoError(t, err)

	// The thief comes back at once each time the host takes its key back,
	// and never gives up: the host, after its third drop, does.
	ctx, cancel := context.WithCancel(context.Background())
	thief := agentchat.New(agentchat.Config{URL: url[1], Channel: "#build", Identity: hid, Name: "thief",
		DisplacedWait: 50 * time.Millisecond, MaxDisplaced: 1 << 20, FirstAttempts: 1, Logger: zerolog.Nop()})
	thiefDone := make(chan struct{})
	go func() {
		defer close(thiefDone)
		_ = thief.Run(ctx)
	}()
	go func() {
		for range thief.Events() {
		}
	}()
	t.Cleanup(func() { cancel(); <-thiefDone })

	select {
	case code := <-done:
		assert.Equal(t, 1, code)
	case <-time.After(upWait):
		t.Fatalf("foreman up ran on without its host:\n%s", stderr)
	}
	errOut := stderr.String()
	assert.Contains(t, errOut, "foreman host: ")
	assert.Contains(t, errOut, "another program keeps connecting with this identity")
	assert.Contains(t, errOut, "foreman has stopped")
	assert.Contains(t, errOut, "the room is closed")
	_, err = net.Dial("tcp", strings.TrimPrefix(url[1], "ws://"))
	assert.Error(t, err, "the room is closed")
	for _, l := range strings.Split(strings.TrimSpace(errOut), "\n") {
		assert.False(t, strings.HasPrefix(l, "{"), "a JSON log line beside up's summary: %s", l)
	}
}
