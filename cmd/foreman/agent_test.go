package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/agentchat/server"
	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/protocol"
)

// agentRoom is a chat server with a client standing in for foreman.
type agentRoom struct {
	t     *testing.T
	url   string
	coord *agentchat.Client
	lines chan agentchat.Message
	joins chan string // names of agents joining
}

const agentWait = 10 * time.Second

func newAgentRoom(t *testing.T) *agentRoom {
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.Start(ctx, server.Config{Listen: "127.0.0.1:0", Channels: []string{"#build"}, RateLimit: 5 * time.Millisecond, Logger: zerolog.Nop()})
	require.NoError(t, err)
	id, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	r := &agentRoom{t: t, url: srv.URL(), lines: make(chan agentchat.Message, 100), joins: make(chan string, 10),
		coord: agentchat.New(agentchat.Config{URL: srv.URL(), Channel: "#build", Identity: id, RateLimit: 5 * time.Millisecond, Logger: zerolog.Nop()})}
	done := make(chan struct{})
	joined := make(chan struct{})
	go func() { defer close(done); _ = r.coord.Run(ctx) }()
	go func() {
		for e := range r.coord.Events() {
			switch e := e.(type) {
			case agentchat.Joined:
				close(joined)
			case agentchat.Message:
				r.lines <- e
			case agentchat.AgentJoined:
				r.joins <- e.Agent.Name
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done; srv.Close() })
	select {
	case <-joined:
	case <-time.After(agentWait):
		t.Fatal("the stand-in coordinator never joined")
	}
	return r
}

// joined waits for an agent named name to join.
func (r *agentRoom) joined(name string) {
	r.t.Helper()
	timeout := time.After(agentWait)
	for {
		select {
		case n := <-r.joins:
			if n == name {
				return
			}
		case <-timeout:
			r.t.Fatalf("%s never joined", name)
		}
	}
}

// expect waits for a line starting with prefix and returns its sender.
func (r *agentRoom) expect(prefix string) string {
	r.t.Helper()
	timeout := time.After(agentWait)
	for {
		select {
		case m := <-r.lines:
			for _, l := range strings.Split(m.Content, "\n") {
				if strings.HasPrefix(l, prefix) {
					return m.From
				}
			}
		case <-timeout:
			r.t.Fatalf("nobody said %q", prefix)
		}
	}
}

func (r *agentRoom) say(l string) { r.coord.Send(agentchat.Line{Text: l}) }

// startAgent runs foreman with args until the test ends it.
func startAgent(t *testing.T, stdin io.Reader, args ...string) (stdout, stderr *syncBuffer, done <-chan int, stop func()) {
	stdout, stderr = &syncBuffer{}, &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	a := &app{stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetIn(stdin)
	ch := make(chan int, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		if err := root.ExecuteContext(ctx); err != nil {
			stderr.Write([]byte(err.Error()))
			ch <- 1
			return
		}
		ch <- 0
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(agentWait):
			t.Error("foreman agent did not stop")
		}
	})
	return stdout, stderr, ch, cancel
}

func TestAgentChatSendsWhatIsTypedAndPrintsTheRoom(t *testing.T) {
	r := newAgentRoom(t)
	in, typing := io.Pipe()
	stdout, stderr, done, _ := startAgent(t, in, "agent", "--url", r.url, "--role", "chat", "--name", "me", "--rate-limit", "5ms")
	go func() { _, _ = io.WriteString(typing, "CLAIM api\n\n") }()
	me := r.expect("CLAIM api")
	assert.Contains(t, stderr.String(), "me: agent id "+me)

	r.say("TASKS api web\nACK api " + me)
	require.Eventually(t, func() bool { return strings.Contains(stdout.String(), "ACK api "+me+" (me)") }, agentWait, 5*time.Millisecond,
		"the room is printed, each id kept and followed by its name: %q", stdout.String())
	assert.Contains(t, stdout.String(), "foreman  coordinator TASKS api web", "the first to say TASKS is the coordinator")
	assert.NotContains(t, stdout.String(), "\x1b[", "no colour off a terminal")

	// When stdin ends, what was typed goes out first, then it leaves.
	go func() { _, _ = io.WriteString(typing, "PROGRESS api 50\n"); typing.Close() }()
	r.expect("PROGRESS api 50")
	select {
	case code := <-done:
		assert.Equal(t, 0, code, stderr.String())
	case <-time.After(agentWait):
		t.Fatal("chat did not end with stdin")
	}
}

func TestAgentBuilderFollowsTheProtocol(t *testing.T) {
	r := newAgentRoom(t)
	stdout, stderr, done, stop := startAgent(t, strings.NewReader(""), "agent", "--url", r.url, "--role", "builder", "--name", "b1",
		"--minute", "10ms", "--rate-limit", "5ms", "--prefer", "api", "--block-on", "api=db")
	r.joined("b1")
	r.say("TASKS db api")
	b1 := r.expect("CLAIM api")
	r.say("ACK api " + b1)
	r.expect("PROGRESS api 25")
	r.expect("BLOCKED api db")
	r.say("WAIT api " + b1 + " db")
	r.expect("PROGRESS api 25 waiting for db")
	r.say("UNBLOCKED api " + b1)
	r.expect("READY api b1/api")
	assert.Contains(t, stdout.String(), "b1       builder     READY api b1/api", "its own lines are shown too")

	// Once the build is complete it leaves, on its own.
	r.say("MERGED api\nCOMPLETE shop")
	select {
	case code := <-done:
		assert.Equal(t, 0, code, stderr.String())
	case <-time.After(agentWait):
		stop()
		t.Fatalf("the builder stayed after COMPLETE:\n%s", stderr.String())
	}
	assert.Contains(t, stderr.String(), "b1: the build is complete; leaving")
}

func TestAgentRefusesBadScripts(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--role", "juggler"}, `--role "juggler": want builder, auditor, ci, operator or chat`},
		{[]string{"--block-on", "api"}, `--block-on "api": want c=dep`},
		{[]string{"--abort-on", "api="}, `--abort-on "api=": want c=reason`},
		{[]string{"--role", "auditor", "--fail", "=x"}, `--fail "=x"`},
	} {
		args := append([]string{"agent", "--url", "ws://127.0.0.1:1"}, tc.args...)
		code, _, errOut := foreman(t, args...)
		assert.Equal(t, 1, code, tc.args)
		assert.Contains(t, errOut, tc.want)
	}

	// A mistyped role fails before a key file is made for it.
	key := filepath.Join(t.TempDir(), "b1.json")
	code, _, errOut := foreman(t, "agent", "--url", "ws://127.0.0.1:1", "--role", "bulder", "--identity", key)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `--role "bulder": want builder`)
	assert.NoFileExists(t, key)
}

// A mistyped --identity is refused, naming the path and the remedy, and
// makes no key: silently making one gave the agent another id (issue 48).
// --new makes it.
func TestAgentRefusesAMissingIdentityWithoutNew(t *testing.T) {
	key := filepath.Join(t.TempDir(), "b1.jsn")
	code, _, errOut := foreman(t, "agent", "--url", "ws://127.0.0.1:1", "--role", "builder", "--identity", key)
	assert.Equal(t, 1, code)
	assert.Equal(t, "foreman: --identity "+key+": no such file; check the path, or add --new to make a new identity there", strings.TrimSpace(errOut))
	assert.NoFileExists(t, key)

	id, err := agentIdentity(key, "b1", "builder", true)
	require.NoError(t, err)
	assert.FileExists(t, key)
	again, err := agentIdentity(key, "", "builder", false)
	require.NoError(t, err, "an identity that is there needs no --new")
	assert.Equal(t, id.AgentID(), again.AgentID())
}

// With --repo a scripted builder pushes its work before each READY, so
// that foreman host has a branch to check: without it the host answered
// every READY with "no branch b1/db" until db was escalated as
// ci-exhausted (found following the README's foreman host path).
func TestAgentBuilderPushesToTheRepository(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "shop.git")
	repo, err := gitrepo.Init(ctx, dir, "main", true)
	require.NoError(t, err)
	main, err := repo.RevParse(ctx, "refs/heads/main")
	require.NoError(t, err)

	r := newAgentRoom(t)
	_, stderr, done, stop := startAgent(t, strings.NewReader(""), "agent", "--url", r.url, "--role", "builder", "--name", "b1",
		"--minute", "10ms", "--rate-limit", "5ms", "--repo", dir)
	r.joined("b1")
	r.say("TASKS db")
	b1 := r.expect("CLAIM db")
	r.say("ACK db " + b1)
	// Its work in progress is pushed at each PROGRESS, which names the
	// branch (contract section 10).
	r.expect("PROGRESS db 25 branch=b1/db")
	r.expect("READY db b1/db")
	first, err := repo.RevParse(ctx, "refs/heads/b1/db")
	require.NoError(t, err)
	commits, err := repo.Git(ctx, "rev-list", "--reverse", main+".."+first)
	require.NoError(t, err)
	history := strings.Fields(commits)
	require.Len(t, history, 4, "three PROGRESS pushes, then the work before READY")
	body, err := repo.Git(ctx, "show", history[0]+":db/wip.txt")
	require.NoError(t, err)
	assert.Equal(t, "db, step 1, by b1\n", body, "pushed before the first PROGRESS")
	parent, err := repo.Git(ctx, "rev-parse", history[0]+"^")
	require.NoError(t, err)
	assert.Equal(t, main, strings.TrimSpace(parent), "work starts from main")
	body, err = repo.Git(ctx, "show", first+":db/db.txt")
	require.NoError(t, err)
	assert.Equal(t, "db, built by b1\n", body)

	// A FIX is pushed on top of what the branch holds.
	r.say("FIX db " + b1 + " 1/5 CI failed: make test")
	r.expect("READY db b1/db")
	second, err := repo.RevParse(ctx, "refs/heads/b1/db")
	require.NoError(t, err)
	parent, err = repo.Git(ctx, "rev-parse", second+"^^")
	require.NoError(t, err)
	assert.Equal(t, first, strings.TrimSpace(parent), "a PROGRESS push, then the fix, on top of what READY named")
	stop()
	assert.Equal(t, 0, <-done, stderr.String())

	code, _, errOut := foreman(t, "agent", "--url", "ws://127.0.0.1:1", "--role", "auditor", "--repo", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "--repo is for --role builder")
	code, _, errOut = foreman(t, "agent", "--url", "ws://127.0.0.1:1", "--repo", t.TempDir())
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "not a git repository")
}

// Beside a config with host.repo, a scripted builder pushes there without
// being told (--repo "" pushes nothing): the README's builders need no
// --repo beside foreman up.
func TestAgentBuilderPushesToHostRepoByDefault(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	repo, err := gitrepo.Init(ctx, filepath.Join(dir, "shop.git"), "trunk", true)
	require.NoError(t, err)
	r := newAgentRoom(t)
	config := writeFile(t, dir, "foreman.yaml", "server:\n  url: "+r.url+"\n  rate_limit: 5ms\nhost:\n  repo: shop.git\n  target: trunk\n")
	_, stderr, done, stop := startAgent(t, strings.NewReader(""), "agent", config, "--role", "builder", "--name", "b1", "--minute", "10ms")
	r.joined("b1")
	r.say("TASKS db")
	b1 := r.expect("CLAIM db")
	r.say("ACK db " + b1)
	r.expect("READY db b1/db")
	pushed, err := repo.RevParse(ctx, "refs/heads/b1/db")
	require.NoError(t, err)
	assert.NotEmpty(t, pushed, "b1/db was pushed to host.repo, from host.target")
	stop()
	assert.Equal(t, 0, <-done, stderr.String())

	_, stderr, done, stop = startAgent(t, strings.NewReader(""), "agent", config, "--role", "builder", "--name", "b2", "--minute", "10ms", "--repo", "")
	r.joined("b2")
	r.say("TASKS api")
	b2 := r.expect("CLAIM api")
	r.say("ACK api " + b2)
	r.expect("READY api b2/api")
	none, err := repo.RevParse(ctx, "refs/heads/b2/api")
	require.NoError(t, err)
	assert.Empty(t, none, `--repo "" pushes nothing`)
}

// A builder that takes over starts from the work the last one left: the
// branch its ACK names and, once the host has pinned it, the commit the
// handoff line gives, even after the last builder force-pushed its branch
// empty (contract section 10).
func TestAgentBuilderStartsFromTheHandoff(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "shop.git")
	repo, err := gitrepo.Init(ctx, dir, "main", true)
	require.NoError(t, err)
	main, err := repo.RevParse(ctx, "refs/heads/main")
	require.NoError(t, err)
	left, err := repo.CommitFiles(ctx, main, map[string]string{"api/half.txt": "half of api, by b0\n"}, "api: half", gitrepo.Author{Name: "b0", Email: "b0@x.invalid"})
	require.NoError(t, err)
	require.NoError(t, repo.UpdateRef(ctx, "refs/foreman/handoff/api/1", left, "", "the host's pin"))
	require.NoError(t, repo.UpdateRef(ctx, "refs/heads/b0/api", main, "", "b0's branch, force-pushed empty after it left"))

	r := newAgentRoom(t)
	hostID, err := agentchat.NewIdentity("host")
	require.NoError(t, err)
	hctx, stopHost := context.WithCancel(ctx)
	host := agentchat.New(agentchat.Config{URL: r.url, Channel: "#build", Identity: hostID, RateLimit: 5 * time.Millisecond, Logger: zerolog.Nop()})
	hostDone := make(chan struct{})
	go func() { defer close(hostDone); _ = host.Run(hctx) }()
	t.Cleanup(func() { stopHost(); <-hostDone })
	go func() {
		for range host.Events() {
		}
	}()
	r.joined("host")

	_, stderr, done, stop := startAgent(t, strings.NewReader(""), "agent", "--url", r.url, "--role", "builder", "--name", "b2",
		"--minute", "10ms", "--rate-limit", "5ms", "--repo", dir, "--block-on", "api=db")
	r.joined("b2")
	r.say("TASKS api")
	b2 := r.expect("CLAIM api")
	r.say("ACK api " + b2 + " branch=b0/api after TIMEOUT of @00000000000000b0: progress 40%")
	r.expect("PROGRESS api 55 branch=b2/api")
	r.expect("BLOCKED api db")
	// While it waits the host's handoff line comes; the stand-in foreman
	// says UNBLOCKED once it has heard it, so b2 has it first.
	line, ok := protocol.HandoffLine(protocol.Handoff{To: b2, Component: "api", N: 1, Commit: left, From: "@00000000000000b0", Branch: "b0/api"})
	require.True(t, ok)
	host.Send(agentchat.Line{Seq: 1, Text: line})
	r.expect(b2 + " api: refs/foreman/handoff/api/1")
	r.say("UNBLOCKED api " + b2)
	r.expect("READY api b2/api")
	tip, err := repo.RevParse(ctx, "refs/heads/b2/api")
	require.NoError(t, err)
	_, err = repo.Git(ctx, "merge-base", "--is-ancestor", left, tip)
	assert.NoError(t, err, "b2/api goes on from the pinned commit")
	body, err := repo.Git(ctx, "show", tip+":api/half.txt")
	require.NoError(t, err)
	assert.Equal(t, "half of api, by b0\n", body, "the work b0 left is in what b2 says READY for")
	stop()
	assert.Equal(t, 0, <-done, stderr.String())
}
