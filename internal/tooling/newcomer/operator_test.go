package newcomer

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
)

// built is a foreman binary built once for the tests below, with version
// control stamping off (-buildvcs=false), as a build from a copy of the
// source without .git would be.
var built struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// installed puts a foreman built from this source on the user's PATH.
func installed(t *testing.T, u *user) {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "foreman-bin-"); built.err != nil {
			return
		}
		cmd := exec.Command("go", "build", "-buildvcs=false", "-o", filepath.Join(built.dir, "foreman"), "./cmd/foreman")
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		if err != nil {
			built.err = &exec.ExitError{Stderr: out}
		}
	})
	require.NoError(t, built.err, "go build")
	u.setenv("PATH", built.dir+string(filepath.ListSeparator)+u.getenv("PATH"))
}

// A binary built without version control information still says which
// foreman it is.
func TestVersionWithoutVersionControl(t *testing.T) {
	if testing.Short() {
		t.Skip("builds foreman")
	}
	u := newUser(t)
	installed(t, u)
	out, _ := u.run(u.dir, "foreman version")
	assert.Regexp(t, `^foreman v\d+\.\d+\.\d+-devel, without version control information`, out)
}

// room starts what the README starts before anyone speaks: init, the room
// on a free port (which the others learn from FOREMAN_SERVER_URL), and
// foreman run with its board on a free port.
func room(t *testing.T, u *user) (serve, run *proc) {
	t.Helper()
	installed(t, u)
	u.run(u.dir, initStep)
	serve = u.start(u.dir, serveStep)
	url := serve.await(t, serve.stderr, 1, `listening on (ws://127\.0\.0\.1:\d+)`)[1]
	u.setenv("FOREMAN_SERVER_URL", url)
	run = u.start(u.dir, runStep)
	return serve, run
}

// The operator, typing only in foreman agent --role chat, finds a builder
// with /who and ASSIGNs it a component by its name: the chat client sends
// the id, and says so. Here b1 gave db up as a hard blocker; the operator
// settles it by handing db back to b1 (the tool is installed now).
func TestOperatorFindsABuilderAndAssignsByName(t *testing.T) {
	if testing.Short() {
		t.Skip("builds foreman, and runs a build across four processes")
	}
	u := newUser(t)
	serve, run := room(t, u)
	operator := u.start(u.dir, chatStep)
	operator.await(t, operator.stderr, 1, `olga: in #build\n`)
	operator.await(t, operator.stdout, 1, `foreman +coordinator TASKS db\n`)

	builder := u.start(u.dir, builderStep)
	operator.await(t, operator.stdout, 1, `foreman +coordinator ESCALATE db hard-blocker missing_dependency: no schema migration tool installed`)

	operator.type_(t, "/who")
	who := operator.await(t, operator.stderr, 1, `(?m)^  b1 +(@[0-9a-f]+) +builder \(by its lines\)$`)
	b1 := who[1]
	out := operator.stderr.String()
	assert.Regexp(t, `(?m)^In #build \(3\): names and ids from the room; roles from .*foreman.yaml's roles\.\*`, out)
	assert.Regexp(t, `(?m)^  foreman +@[0-9a-f]+ +coordinator$`, out)
	assert.Regexp(t, `(?m)^  olga +@[0-9a-f]+ +operator \(roles\.operators\), you$`, out)

	operator.type_(t, "/id b1")
	operator.await(t, operator.stderr, 1, `(?m)^b1 is `+b1+` \(here\)$`)

	operator.type_(t, "ASSIGN db b1")
	operator.await(t, operator.stderr, 1, `(?m)^b1 is `+b1+`, the only one here by that name: sending ASSIGN db `+b1+`$`)
	operator.await(t, operator.stdout, 1, `olga +operator +ASSIGN db `+b1+` \(b1\)\n`)
	operator.await(t, operator.stdout, 1, `foreman +coordinator OK ASSIGN db `+b1+` \(b1\)\n`)
	operator.await(t, operator.stdout, 1, `foreman +coordinator ACK db `+b1+` \(b1\)`)
	operator.await(t, operator.stdout, 2, `b1 +PROGRESS db `) // the first was before the ABORT

	operator.type_(t, "/who")
	operator.await(t, operator.stderr, 1, `(?m)^  b1 +`+b1+` +builder \(by its lines\) +owns db$`)

	// A name nobody here goes by is refused in the chat, never sent.
	operator.type_(t, "ASSIGN db nobody")
	operator.await(t, operator.stderr, 1, `not sent: nobody here goes by nobody`)
	operator.type_(t, "/quit")
	assert.Equal(t, 0, operator.exited(t), operator.stderr.String())
	assert.NotContains(t, operator.stdout.String(), "nobody")
	for _, p := range []*proc{builder, run, serve} {
		p.stop(t)
	}
}

// A second foreman run with the same key and another journal is refused
// while the first goes on coordinating: the build completes, no reply is
// said twice, and the refusal is said once though the second was started
// twice. The first is dropped by the room each time the second signs in,
// and comes back.
func TestSecondRunWithTheSameKeyIsRefusedAndTheBuildCompletes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds foreman, and runs a whole build across six processes")
	}
	u := newUser(t)
	u.setenv("FOREMAN_SERVER_RATE_LIMIT", "200ms")
	serve, run := room(t, u)
	run.await(t, run.stderr, 1, `started the build`)
	w := watch(t, u.getenv("FOREMAN_SERVER_URL"))

	aud := u.start(u.dir, "foreman agent --role auditor --name aud --minute 1s")
	var builders []*proc
	for _, name := range []string{"b1", "b2", "b3"} {
		builders = append(builders, u.start(u.dir, "foreman agent --role builder --name "+name+" --minute 1s --steps 2"))
	}
	w.await(t, "ACK db ")

	for attempt := range 2 {
		second := u.start(u.dir, "foreman run --journal .foreman/second-journal --http 127.0.0.1:0")
		assert.Equal(t, 1, second.exited(t), "attempt %d", attempt)
		assert.Contains(t, second.stderr.String(), "has no record of it", "attempt %d", attempt)
	}
	w.await(t, "COMPLETE bookshop")

	run.await(t, run.stderr, 1, `another program connected with this identity .* coming back in 3s`)
	assert.NotContains(t, run.stderr.String(), "gives up")
	w.check(t)

	for _, p := range append(builders, aud, run, serve) {
		p.stop(t)
	}
}

// watcher reads the room as a plain client: every line, and the stamps
// on foreman's messages, which number its replies.
type watcher struct {
	mu      sync.Mutex
	lines   []string
	seqs    map[uint64]int // times each reply number was seen
	again   int            // messages stamped as possibly repeated
	changed chan struct{}
}

func watch(t *testing.T, url string) *watcher {
	t.Helper()
	id, err := agentchat.NewIdentity("watcher")
	require.NoError(t, err)
	c := agentchat.New(agentchat.Config{URL: url, Channel: "#build", Identity: id, Logger: zerolog.Nop()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	w := &watcher{seqs: map[uint64]int{}, changed: make(chan struct{})}
	go func() {
		for e := range c.Events() {
			switch e := e.(type) {
			case agentchat.Joined:
				for _, m := range e.History {
					w.heard(m)
				}
			case agentchat.Message:
				w.heard(e)
			}
		}
	}()
	return w
}

func (w *watcher) heard(m agentchat.Message) {
	if m.Notice {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if st := m.Stamp; st != nil && strings.HasPrefix(st.Tag, "foreman ") {
		for _, r := range st.Seqs {
			for s := r.From; s <= r.To; s++ {
				w.seqs[s]++
			}
		}
		if st.Again {
			w.again++
		}
	}
	for l := range strings.SplitSeq(m.Body(), "\n") {
		w.lines = append(w.lines, strings.TrimSpace(l))
	}
	close(w.changed)
	w.changed = make(chan struct{})
}

// await waits for a line that starts with prefix.
func (w *watcher) await(t *testing.T, prefix string) {
	t.Helper()
	deadline := time.After(patience)
	for {
		w.mu.Lock()
		changed := w.changed
		for _, l := range w.lines {
			if strings.HasPrefix(l, prefix) {
				w.mu.Unlock()
				return
			}
		}
		w.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the room never heard %q:\n%s", prefix, strings.Join(w.lines, "\n"))
		}
	}
}

// check: every reply went out once, none marked as possibly repeated, and
// the refusal was said once.
func (w *watcher) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	require.NotEmpty(t, w.seqs)
	for s, n := range w.seqs {
		assert.Equal(t, 1, n, "reply #%d was said %d times", s, n)
	}
	for s := uint64(1); s <= uint64(len(w.seqs)); s++ {
		assert.Contains(t, w.seqs, s, "reply #%d never reached the room", s)
	}
	assert.Zero(t, w.again, "no message went out again")
	refusals := 0
	refusal := regexp.MustCompile(`^ERROR build foreman will not coordinate here: its journal has no record of "foreman bookshop/[0-9a-f]+", which this identity coordinates here, so it left`)
	for _, l := range w.lines {
		if refusal.MatchString(l) {
			refusals++
		}
	}
	assert.Equal(t, 1, refusals, "the refusal, said once across two attempts")
}
