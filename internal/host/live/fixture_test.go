package live

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/bot"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/host/sandbox"
	"github.com/agentforeman/foreman/internal/host/sandbox/sandboxtest"
	"github.com/agentforeman/foreman/internal/tooling/natstest"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
	"github.com/agentforeman/foreman/internal/worker"
)

// The test binary is three things: the tests; with HELPER set, the check
// the host runs; with FOREMAN_HOST_TEST_CONFIG set, foreman host itself,
// as a process of its own that a test can kill -9.
func TestMain(m *testing.M) {
	if mode := os.Getenv("HELPER"); mode != "" {
		os.Exit(helper(mode))
	}
	if path := os.Getenv("FOREMAN_HOST_TEST_CONFIG"); path != "" {
		os.Exit(hostProcess(path))
	}
	if path := os.Getenv("FOREMAN_WORKER_TEST_CONFIG"); path != "" {
		os.Exit(workerProcess(path))
	}
	os.Exit(m.Run())
}

// workerProcess is foreman worker, as a process of its own, with its id
// and work directory from FOREMAN_CLUSTER_ID and FOREMAN_WORKER_WORK.
func workerProcess(path string) int {
	c, err := config.Load(path, nil, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := zerolog.New(os.Stderr).With().Timestamp().Logger()
	if err := worker.Main(ctx, c, log, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

func hostProcess(path string) int {
	c, err := config.Load(path, nil, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "host:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := zerolog.New(os.Stderr).With().Timestamp().Logger()
	s, err := Prepare(ctx, c, log)
	if err == nil {
		defer s.Close()
		if mark := os.Getenv("FOREMAN_HOST_TEST_STALL_LANDING"); mark != "" {
			s.Options.Jobs = stallOnce{inner: s.Options.Jobs, mark: mark}
		}
		if mark := os.Getenv("FOREMAN_HOST_TEST_HOLD_LANDING"); mark != "" {
			s.Options.Jobs = stallOnce{inner: s.Options.Jobs, mark: mark, report: true}
		}
		err = s.Serve(ctx, c, log, os.Stderr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "host:", err)
		return 1
	}
	return 0
}

// stallOnce lands for real, then, the first time of all (the file mark
// made says it happened), never reports it: the host is to be killed
// between the compare-and-swap and MERGED. With report, it holds the
// landing until the host stops, then reports it: the host is stopping,
// and records it without saying MERGED.
type stallOnce struct {
	inner  Jobs
	mark   string
	report bool
}

func (s stallOnce) Run(ctx context.Context, j host.Job) host.Outcome {
	o := s.inner.Run(ctx, j)
	if j.Kind == host.Land && o.Result == host.Landed {
		if f, err := os.OpenFile(s.mark, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintln(f, o.Commit)
			f.Close()
			<-ctx.Done()
			if s.report {
				return o
			}
			return host.Outcome{Run: j.Run, Result: host.Cancelled}
		}
	}
	return o
}

// helper is the check. It fails when a file of the worktree holds BUG, or
// holds "conflicts-with:X" and a file X is there too (two components that
// pass alone and fail together); in mode gate it first says it started
// (GATE.started) and waits for the test to open the gate (GATE.open); in
// mode hang it never ends; in mode flaky it fails the first time it checks
// each component; in mode flakylearn, too, and the first two times it
// checks component d. A check that passes records the commit it checked in
// RECORD.
func helper(mode string) int {
	switch mode {
	case "gate":
		gate := os.Getenv("GATE")
		_ = os.WriteFile(gate+"."+os.Getenv("FOREMAN_COMPONENT")+".started", nil, 0o644)
		for {
			if _, err := os.Stat(gate + ".open"); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	case "hang":
		time.Sleep(time.Hour)
	case "flaky", "flakylearn":
		times := 1
		if mode == "flakylearn" && os.Getenv("FOREMAN_COMPONENT") == "d" {
			times = 2
		}
		for i := range times {
			mark := fmt.Sprintf("%s.%s.flaked%d", os.Getenv("GATE"), os.Getenv("FOREMAN_COMPONENT"), i)
			if _, err := os.Stat(mark); err != nil {
				_ = os.WriteFile(mark, nil, 0o644)
				fmt.Println("FAIL: a flake")
				return 1
			}
		}
	}
	entries, _ := os.ReadDir(".")
	for _, e := range entries {
		data, err := os.ReadFile(e.Name())
		if err == nil && strings.Contains(string(data), "BUG") {
			fmt.Printf("FAIL: %s holds BUG\n", e.Name())
			return 1
		}
		if other, ok := strings.CutPrefix(string(data), "conflicts-with:"); err == nil && ok {
			if _, err := os.Stat(strings.TrimSpace(other)); err == nil {
				fmt.Printf("FAIL: %s does not work with %s\n", e.Name(), strings.TrimSpace(other))
				return 1
			}
		}
	}
	if rec := os.Getenv("RECORD"); rec != "" {
		f, err := os.OpenFile(rec, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, os.Getenv("FOREMAN_COMMIT"))
			f.Close()
		}
	}
	fmt.Println("ok")
	return 0
}

var bg = context.Background()

// world is a room with foreman, foreman host bound to a bare repository,
// and scripted peers: builders b1..b3, an auditor and an operator, and a
// watcher that hears everything.
type world struct {
	t *testing.T
	// clusterHosts are the host processes clusterHost made, whose logs a
	// failure shows.
	clusterHosts []*hostProc
	dir          string
	repo         *gitrepo.Repo
	room         *roomtest.Room
	cfgPath      string
	peers        map[string]*roomtest.Peer
	foreman      string // sender ids
	host         string
	gate         string
	record       string

	mu     sync.Mutex
	lines  []roomtest.Said
	cursor int
	news   chan struct{}

	stopHost func()
	byHand   []string          // commits the test pushed straight to main
	nats     *natstest.Server  // with workers: the cluster's NATS
	op       *natstest.Secured // with standbys: the cluster's NATS, as docs/nats/foreman.conf runs it
}

type worldOptions struct {
	components  []string
	mode        string // the check's mode: content (default), gate, hang
	ciTimeout   string
	maxParallel int
	merge       string // rules.merge (default external)
	auditor     string // roles.auditors (default the aud peer)
	rules       string // more rules: lines, indented two spaces
	extra       string // more sections, appended whole
	workers     bool   // the host runs no check: workers do, through an in-process NATS
	checks      string // host.checks, as YAML (default: the helper)
	sandbox     string // host.sandbox (default: on where this machine can)
	ownWorkers  bool   // a cluster world (standby_test.go) whose test starts its workers itself
	lease       string // with workers: cluster.lease (default 10s)
}

func newWorld(t *testing.T, o worldOptions) *world {
	t.Helper()
	if o.mode == "" {
		o.mode = "content"
	}
	if o.ciTimeout == "" {
		o.ciTimeout = "1h"
	}
	if o.maxParallel == 0 {
		o.maxParallel = 1
	}
	if len(o.components) == 0 {
		o.components = []string{"db", "api", "web"}
	}
	dir := t.TempDir()
	repo, err := gitrepo.Init(bg, filepath.Join(dir, "repo.git"), "main", true)
	require.NoError(t, err)
	w := &world{t: t, dir: dir, repo: repo, room: roomtest.Start(t), peers: map[string]*roomtest.Peer{},
		gate: filepath.Join(dir, "signals", "gate"), record: filepath.Join(dir, "signals", "checked"), news: make(chan struct{})}
	// The check (this binary) tells the test through files in signals/,
	// the one directory of the test's it may write: it runs sandboxed.
	require.NoError(t, os.Mkdir(filepath.Join(dir, "signals"), 0o755))
	require.NoError(t, os.Chmod(filepath.Join(dir, "signals"), 0o777)) // a check of a host running as root runs as nobody
	// signals/ is how the checks talk to the test, shared on purpose: not
	// each builder's own copy, as the RW paths are for a real host.
	t.Setenv(sandbox.SharedRWEnv, "1")
	for _, name := range []string{"watch", "b1", "b2", "b3", "aud", "op"} {
		w.peers[name] = w.room.Join(t, name)
	}
	go w.collect()
	// Every host test ends with foreman verify on its repository, once
	// the host and everything else the test started have stopped
	// (cleanups run last registered first).
	t.Cleanup(func() {
		if !t.Failed() {
			w.verified()
		}
	})
	fid, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	require.NoError(t, fid.Save(filepath.Join(dir, "foreman.json")))
	hid, err := agentchat.NewIdentity("host")
	require.NoError(t, err)
	require.NoError(t, hid.Save(filepath.Join(dir, "host.json")))
	w.foreman, w.host = fid.AgentID(), hid.AgentID()

	if o.auditor == "" {
		o.auditor = w.peers["aud"].ID
	}
	merge := o.merge
	if merge == "" {
		merge = "external"
	}
	var comps strings.Builder
	for _, c := range o.components {
		name, deps, _ := strings.Cut(c, ":")
		fmt.Fprintf(&comps, "    - name: %s\n", name)
		if deps != "" {
			fmt.Fprintf(&comps, "      depends_on: [%s]\n", deps)
		}
	}
	yaml := fmt.Sprintf(`server:
  url: %s
  channel: "#build"
  identity: foreman.json
  rate_limit: 10ms
build:
  name: shop
  components:
%sroles:
  operators: [%q]
  auditors: [%q]
  ci: [%q]
  merger: [%q]
rules:
  ci_gating: on
  merge: %s
  ci_timeout: %s
  ci_attempts: 20
  conflict_attempts: 20
  checkin_interval: 1h
  audit_timeout: 1h
  max_build_time: 0
%sjournal:
  path: journal
http:
  listen: ""
host:
  repo: repo.git
  checks: [%q]
  env: ["HELPER=%s", "GATE=%s", "RECORD=%s"]
  max_parallel: %d
  identity: host.json
  sandbox: %s
  sandbox_paths:
    ro: [%q]
    rw: [signals]
%s`, w.room.URL(), comps.String(), w.peers["op"].ID, o.auditor, w.host, w.host, merge, o.ciTimeout, o.rules,
		os.Args[0]+" -test.run=^$", o.mode, w.gate, w.record, o.maxParallel, sandboxSetting(t), filepath.Dir(os.Args[0]), o.extra)
	if o.checks != "" {
		yaml = strings.Replace(yaml, fmt.Sprintf("  checks: [%q]\n", os.Args[0]+" -test.run=^$"), "  checks: "+o.checks+"\n", 1)
	}
	if o.sandbox != "" {
		yaml = strings.Replace(yaml, "  sandbox: "+sandboxSetting(t)+"\n", "  sandbox: "+o.sandbox+"\n", 1)
	}
	if o.workers {
		w.nats = natstest.Start(t)
		if o.lease == "" {
			// One host, which no test here stops: a lease that outlasts a
			// loaded machine's stall (a 1 s one lapsed at load 10, the host
			// led again and checked db a second time, its log db-2).
			o.lease = "10s"
		}
		yaml += fmt.Sprintf("cluster:\n  nats: %s\n  lease: %s\n", w.nats.URL(), o.lease)
	}
	w.cfgPath = filepath.Join(dir, "foreman.yaml")
	require.NoError(t, os.WriteFile(w.cfgPath, []byte(yaml), 0o644))
	w.startForeman()
	w.expect(w.foreman, "TASKS")
	return w
}

var (
	sandboxOnce sync.Once
	sandboxErr  error
)

// sandboxSetting is host.sandbox for the tests: on, as by default, where
// this machine can sandbox checks; off where it cannot (not Linux, inside
// a sandboxed check), unless FOREMANTEST_REQUIRE_SANDBOX (CI) says that
// is a failure.
func sandboxSetting(t *testing.T) string {
	sandboxOnce.Do(func() { _, sandboxErr = sandbox.New(sandbox.Config{Home: t.TempDir()}) })
	if sandboxErr == nil {
		return "on"
	}
	if os.Getenv(sandboxtest.Require) != "" {
		t.Fatalf("no sandbox on this machine: %v", sandboxErr)
	}
	t.Logf("no sandbox on this machine (%v): the host's checks run unconfined", sandboxErr)
	return "off"
}

func (w *world) config() *config.Config {
	c, err := config.Load(w.cfgPath, nil, nil)
	require.NoError(w.t, err)
	return c
}

func (w *world) startForeman() {
	b, err := bot.New(bot.Options{Config: w.config(), Logger: zerolog.Nop(), ShutdownGrace: time.Second})
	require.NoError(w.t, err)
	ctx, cancel := context.WithCancel(bg)
	done := make(chan struct{})
	go func() { defer close(done); _ = b.Run(ctx) }()
	w.t.Cleanup(func() { cancel(); <-done })
}

// startHost runs foreman host in this process.
func (w *world) startHost() {
	w.startHostWith(nil)
}

// startHostWith runs foreman host in this process, its jobs wrapped by
// wrap (if set) and its options changed by each of change.
func (w *world) startHostWith(wrap func(Jobs) Jobs, change ...func(*Options)) {
	c := w.config()
	s, err := Prepare(bg, c, zerolog.New(zerolog.NewTestWriter(w.t)).Level(zerolog.InfoLevel))
	require.NoError(w.t, err)
	if wrap != nil {
		s.Options.Jobs = wrap(s.Options.Jobs)
	}
	for _, f := range change {
		f(&s.Options)
	}
	ctx, cancel := context.WithCancel(bg)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer s.Close()
		if c.Cluster.Enabled() { // with workers: it leads the build (the one host), then runs
			_ = s.Serve(ctx, c, zerolog.Nop(), io.Discard)
			return
		}
		_ = Run(ctx, s.Options)
	}()
	stopped := false
	w.stopHost = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	w.t.Cleanup(w.stopHost)
}

// hostProcess runs foreman host as a process of its own, which kill ends
// with SIGKILL.
func (w *world) startHostProcess() (kill func()) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FOREMAN_HOST_TEST_CONFIG="+w.cfgPath)
	logf, err := os.OpenFile(filepath.Join(w.dir, "host.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	require.NoError(w.t, err)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(w.t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	killed := false
	kill = func() {
		if !killed {
			killed = true
			_ = cmd.Process.Kill()
			<-done
		}
	}
	w.t.Cleanup(kill)
	return kill
}

func (w *world) collect() {
	for l := range w.peers["watch"].Lines() {
		w.mu.Lock()
		w.lines = append(w.lines, l)
		close(w.news)
		w.news = make(chan struct{})
		w.mu.Unlock()
	}
}

func (w *world) say(peer, line string) { w.peers[peer].Say(line) }

func (w *world) id(peer string) string { return w.peers[peer].ID }

// expect waits for the next line from sender that starts with prefix
// (after the last one expect found), and returns it.
func (w *world) expect(sender, prefix string) string {
	w.t.Helper()
	deadline := time.After(3 * time.Minute)
	for {
		w.mu.Lock()
		for ; w.cursor < len(w.lines); w.cursor++ {
			l := w.lines[w.cursor]
			if l.From == sender && strings.HasPrefix(l.Text, prefix) {
				w.cursor++
				w.mu.Unlock()
				return l.Text
			}
		}
		news := w.news
		w.mu.Unlock()
		select {
		case <-news:
		case <-deadline:
			w.t.Fatalf("waited in vain for %q from %s; the room said:\n%s", prefix, sender, w.dump())
		}
	}
}

// said lists every line from sender so far that starts with prefix.
func (w *world) said(sender, prefix string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return roomtest.From(w.lines, sender, prefix)
}

func (w *world) dump() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	names := map[string]string{w.foreman: "foreman", w.host: "host"}
	for n, p := range w.peers {
		names[p.ID] = n
	}
	return roomtest.Dump(w.lines, names)
}

// commit commits files on top of parent (a commit id or a branch) and
// points branch at it: a builder's push.
func (w *world) commit(branch, parent string, files map[string]string) string {
	w.t.Helper()
	if len(parent) != 40 {
		parent = w.tip(parent)
	}
	oid, err := w.repo.CommitFiles(bg, parent, files, "work on "+branch, gitrepo.Author{Name: "builder", Email: "b@example.com"})
	require.NoError(w.t, err)
	if branch != "" {
		old, _ := w.repo.RevParse(bg, "refs/heads/"+branch)
		require.NoError(w.t, w.repo.UpdateRef(bg, "refs/heads/"+branch, oid, old, "push"))
	}
	if branch == "main" {
		w.mu.Lock()
		w.byHand = append(w.byHand, oid) // not landed by foreman: verify must say so
		w.mu.Unlock()
	}
	return oid
}

func (w *world) tip(branch string) string {
	w.t.Helper()
	oid, err := w.repo.RevParse(bg, "refs/heads/"+branch)
	require.NoError(w.t, err)
	return oid
}

func (w *world) git(args ...string) string {
	w.t.Helper()
	out, err := w.repo.Git(bg, args...)
	require.NoError(w.t, err)
	return out
}

// claim has builder claim c and waits for the ACK.
func (w *world) claim(builder, c string) {
	w.say(builder, "CLAIM "+c)
	w.expect(w.foreman, "ACK "+c+" "+w.id(builder))
}

// waitStarted waits for c's gated check to start.
func (w *world) waitStarted(c string) {
	w.t.Helper()
	require.Eventually(w.t, func() bool {
		_, err := os.Stat(w.gate + "." + c + ".started")
		return err == nil
	}, 3*time.Minute, 10*time.Millisecond, "%s's check never started; the room said:\n%s", c, w.dump())
}

func (w *world) openGate() {
	require.NoError(w.t, os.WriteFile(w.gate+".open", nil, 0o644))
}

func (w *world) closeGate(started ...string) {
	require.NoError(w.t, os.Remove(w.gate+".open"))
	for _, c := range started {
		_ = os.Remove(w.gate + "." + c + ".started")
	}
}

// closeGateFiles forgets that c's checks started (a killed host's check
// wrote it), so that waitStarted waits for the next.
func (w *world) closeGateFiles(cs ...string) {
	for _, c := range cs {
		_ = os.Remove(w.gate + "." + c + ".started")
	}
}

// queue reads the queue view the host writes.
func (w *world) queue() host.QueueView {
	v, _ := ReadQueue(QueueFile(filepath.Join(w.dir, ".foreman", "host", "logs")))
	return v
}

// waitQueue waits until the queue view satisfies ok.
func (w *world) waitQueue(what string, ok func(host.QueueView) bool) {
	w.t.Helper()
	require.Eventually(w.t, func() bool { return ok(w.queue()) }, 3*time.Minute, 10*time.Millisecond,
		"the queue never showed %s: %+v\nthe room said:\n%s", what, w.queue(), w.dump())
}

var gitrepoAuthor = gitrepo.Author{Name: "builder", Email: "b@example.com"}

func (w *world) readFile(path string) string {
	w.t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(w.t, err)
	return string(data)
}
