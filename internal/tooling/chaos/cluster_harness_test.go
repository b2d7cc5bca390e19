package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/cluster"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// foremen is one build run by several foreman processes in a cluster: they
// share the build's identity and config, each with its own cluster.id and
// display name (p1, p2, ...), so that the room shows which process said
// each line.
type foremen struct {
	t     *testing.T
	dir   string
	id    string // the build's sender id, shared
	procs []*member
	comps []coordinator.Component
	// signIn is what the cluster section says of signing in (cluster.tls,
	// cluster.creds), indented; the user and password come from the
	// environment the processes inherit.
	signIn string
}

type member struct {
	f      *foremen
	name   string
	dir    string
	config string
	cmd    *exec.Cmd
	done   chan struct{} // closed once cmd has exited and been waited for
	starts int
}

// clusterConfig is a foreman config in a cluster; extra is appended.
const clusterConfig = `server:
  url: %s
  identity: %s
  name: %s
  rate_limit: %s
build:
  name: shop
  components:
%sroles:
  auditors: [%s]
rules:
  checkin_interval: 2s
  max_build_time: 0
cluster:
  nats: %s
  lease: %s
  id: %s
%shttp:
  listen: ""
log:
  format: json
  level: debug
%s`

func newForemen(t *testing.T, room *roomtest.Room, natsURL func(i int) string, lease time.Duration, n int,
	comps []coordinator.Component, auditors []string) *foremen {
	return newForemenSigned(t, room, natsURL, lease, n, comps, auditors, "")
}

// newForemenSigned is newForemen whose cluster section also says signIn.
func newForemenSigned(t *testing.T, room *roomtest.Room, natsURL func(i int) string, lease time.Duration, n int,
	comps []coordinator.Component, auditors []string, signIn string) *foremen {
	t.Helper()
	dir := t.TempDir()
	ident, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	require.NoError(t, ident.Save(filepath.Join(dir, "identity.json")))
	f := &foremen{t: t, dir: dir, id: ident.AgentID(), comps: comps, signIn: signIn}
	for i := range n {
		m := &member{f: f, name: fmt.Sprintf("p%d", i+1), dir: filepath.Join(dir, fmt.Sprintf("p%d", i+1))}
		require.NoError(t, os.MkdirAll(m.dir, 0o700))
		m.config = filepath.Join(m.dir, "foreman.yaml")
		m.write(room, natsURL(i), lease, comps, auditors, "")
		f.procs = append(f.procs, m)
		t.Cleanup(m.kill)
	}
	return f
}

func (m *member) write(room *roomtest.Room, natsURL string, lease time.Duration, comps []coordinator.Component, auditors []string, extra string) {
	var list strings.Builder
	for _, c := range comps {
		fmt.Fprintf(&list, "    - name: %s\n", c.Name)
		if len(c.Deps) > 0 {
			fmt.Fprintf(&list, "      depends_on: [%s]\n", strings.Join(c.Deps, ", "))
		}
	}
	text := fmt.Sprintf(clusterConfig, room.URL(), filepath.Join(m.f.dir, "identity.json"), m.name, room.Rate(),
		list.String(), quoted(auditors), natsURL, lease, m.name, m.f.signIn, extra)
	require.NoError(m.f.t, os.WriteFile(m.config, []byte(text), 0o600))
}

func (m *member) logPath(i int) string { return filepath.Join(m.dir, fmt.Sprintf("run%02d.log", i)) }

// start runs the process; its log goes to a file per start.
func (m *member) start() {
	m.f.t.Helper()
	m.starts++
	log, err := os.Create(m.logPath(m.starts))
	require.NoError(m.f.t, err)
	m.cmd = exec.Command(foremanBin, "run", m.config)
	m.cmd.Stdout, m.cmd.Stderr = log, log
	require.NoError(m.f.t, m.cmd.Start())
	cmd, done := m.cmd, make(chan struct{})
	m.done = done
	go func() { _ = cmd.Wait(); log.Close(); close(done) }()
}

func (m *member) running() bool {
	if m.done == nil {
		return false
	}
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// kill stops the process with SIGKILL: no cleanup of any kind.
func (m *member) kill() {
	if m.running() {
		_ = m.cmd.Process.Kill()
		select {
		case <-m.done:
		case <-time.After(10 * time.Second):
		}
	}
}

// standingBy waits until the process has joined the pool (it waits half a
// lease to see its peers before it takes or watches for anything).
func (m *member) standingBy(timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		data, _ := os.ReadFile(m.logPath(m.starts))
		if strings.Contains(string(data), "in the cluster: standing by") {
			return true
		}
	}
	return false
}

func (m *member) signal(s syscall.Signal) { _ = m.cmd.Process.Signal(s) }

// exited waits for the process to end and returns its exit code and log.
func (m *member) exited(timeout time.Duration) (int, string, bool) {
	select {
	case <-m.done:
	case <-time.After(timeout):
		return 0, "", false
	}
	data, _ := os.ReadFile(m.logPath(m.starts))
	return m.cmd.ProcessState.ExitCode(), string(data), true
}

func (f *foremen) member(name string) *member {
	for _, m := range f.procs {
		if m.name == name {
			return m
		}
	}
	return nil
}

func (f *foremen) logs() string {
	var out strings.Builder
	for _, m := range f.procs {
		for i := 1; i <= m.starts; i++ {
			data, _ := os.ReadFile(m.logPath(i))
			fmt.Fprintf(&out, "--- %s run %d (%d bytes)\n%s", m.name, i, len(data), tail(string(data), 25))
		}
	}
	return out.String()
}

// logsContain reports whether any process's log, whole, holds s.
func (f *foremen) logsContain(s string) bool {
	for _, m := range f.procs {
		for i := 1; i <= m.starts; i++ {
			if data, _ := os.ReadFile(m.logPath(i)); strings.Contains(string(data), s) {
				return true
			}
		}
	}
	return false
}

// leases follows the build's lease from the test, as a standby would: who
// holds it, from when (as the test saw it).
type leases struct {
	mu      sync.Mutex
	changes []holding
	w       *cluster.Watch
	cl      *cluster.Cluster
}

type holding struct {
	at     time.Time
	holder string
	epoch  uint64
}

func followLeases(t *testing.T, url string, auth cluster.Auth) *leases {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
	defer ccancel()
	cl, err := cluster.Connect(cctx, cluster.Options{URL: url, ID: "test-observer", Auth: auth, Logger: zerolog.Nop()})
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	w, err := cl.WatchLeases(ctx)
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	ls := &leases{w: w, cl: cl}
	go func() {
		last := holding{}
		for {
			select {
			case <-ctx.Done():
				return
			case <-w.Changed():
			}
			o := w.Lease("shop")
			if o.Rec.Holder != last.holder || o.Rec.Epoch != last.epoch {
				last = holding{at: time.Now(), holder: o.Rec.Holder, epoch: o.Rec.Epoch}
				ls.mu.Lock()
				ls.changes = append(ls.changes, last)
				ls.mu.Unlock()
			}
		}
	}()
	return ls
}

// holder is the lease's holder now, and its epoch.
func (ls *leases) holder() (string, uint64) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if len(ls.changes) == 0 {
		return "", 0
	}
	h := ls.changes[len(ls.changes)-1]
	return h.holder, h.epoch
}

// waitEpoch waits until the lease has an epoch past after, whoever holds it.
func (ls *leases) waitEpoch(after uint64, timeout time.Duration) (string, uint64, bool) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if h, e := ls.holder(); h != "" && e > after {
			return h, e, true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return "", 0, false
}

// waitHolder waits until someone other than not holds the lease.
func (ls *leases) waitHolder(not string, timeout time.Duration) (string, uint64, bool) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if h, e := ls.holder(); h != "" && h != not {
			return h, e, true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return "", 0, false
}

// heldBy reports who held the lease at t, as the test saw it.
func (ls *leases) heldBy(t time.Time) string {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	h := ""
	for _, c := range ls.changes {
		if c.at.After(t) {
			break
		}
		h = c.holder
	}
	return h
}

// lines is everything the build's foremen said in the room, by process.
type lines struct {
	mu    sync.Mutex
	all   []roomtest.Said
	count map[string]int
	twice []string
	seen  chan struct{}
}

func listen(p *roomtest.Peer, bot string) *lines {
	ls := &lines{count: map[string]int{}, seen: make(chan struct{}, 1)}
	go func() {
		for l := range p.Lines() {
			if l.From != bot {
				continue
			}
			ls.mu.Lock()
			ls.all = append(ls.all, l)
			ls.count[l.Text]++
			if ls.count[l.Text] > 1 && !l.Again && !strings.HasPrefix(l.Text, "TASKS") {
				ls.twice = append(ls.twice, l.Name+": "+l.Text)
			}
			ls.mu.Unlock()
			select {
			case ls.seen <- struct{}{}:
			default:
			}
		}
	}()
	return ls
}

func (ls *lines) said() []roomtest.Said {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return append([]roomtest.Said(nil), ls.all...)
}

func (ls *lines) texts() []string {
	var out []string
	for _, l := range ls.said() {
		out = append(out, l.Name+": "+l.Text)
	}
	return out
}

// waitFor waits for a line starting with prefix, said after from, and
// returns it.
func (ls *lines) waitFor(prefix string, from time.Time, timeout time.Duration) (roomtest.Said, bool) {
	deadline := time.After(timeout)
	for {
		for _, l := range ls.said() {
			if !l.At.Before(from) && strings.HasPrefix(l.Text, prefix) {
				return l, true
			}
		}
		select {
		case <-ls.seen:
		case <-deadline:
			return roomtest.Said{}, false
		}
	}
}

// firstAfter waits for the first line said after from by someone other
// than not.
func (ls *lines) firstAfter(from time.Time, not string, timeout time.Duration) (roomtest.Said, bool) {
	deadline := time.After(timeout)
	for {
		for _, l := range ls.said() {
			if l.At.After(from) && l.Name != not {
				return l, true
			}
		}
		select {
		case <-ls.seen:
		case <-deadline:
			return roomtest.Said{}, false
		}
	}
}

// check asserts what every cluster trial must hold: each component ACKed
// once (never owned by two builders), no TIMEOUT, nothing said twice without
// "may repeat", and no line from a process after another took its lease.
func (ls *lines) check(t *testing.T, comps []coordinator.Component, lease *leases, f *foremen) {
	t.Helper()
	said := ls.said()
	acks := map[string]int{}
	for _, l := range said {
		fs := strings.Fields(l.Text)
		switch {
		case len(fs) > 2 && fs[0] == "ACK":
			acks[fs[1]]++
		case fs[0] == "TIMEOUT":
			t.Errorf("a TIMEOUT of a builder that checked in: %q (%s)", l.Text, l.Name)
		}
	}
	for _, c := range comps {
		if acks[c.Name] != 1 {
			t.Errorf("%s ACKed %d times", c.Name, acks[c.Name])
		}
	}
	ls.mu.Lock()
	for _, l := range ls.twice {
		t.Errorf("said twice without may repeat: %q", l)
	}
	ls.mu.Unlock()
	// A line by a process while another held the lease, unless the test
	// had simply not seen its takeover yet (it holds the lease a moment
	// later): a deposed leader's line.
	for _, l := range said {
		if h := lease.heldBy(l.At); h != "" && h != l.Name && lease.heldBy(l.At.Add(2*time.Second)) != l.Name {
			t.Errorf("%s said %q at %s, while %s held the lease", l.Name, l.Text, l.At.Format("15:04:05.000"), h)
		}
	}
	if t.Failed() {
		t.Logf("said:\n%s\nlogs:\n%s", strings.Join(ls.texts(), "\n"), f.logs())
	}
}

// percentile of durations, p in [0,100].
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

// chain is a build of n components, each depending on one or two before it.
func chain(n int) []coordinator.Component {
	out := make([]coordinator.Component, n)
	for i := range out {
		out[i].Name = fmt.Sprintf("c%02d", i)
		if i >= 1 {
			out[i].Deps = append(out[i].Deps, fmt.Sprintf("c%02d", (i-1)/2))
		}
		if i >= 4 && i%3 == 0 {
			out[i].Deps = append(out[i].Deps, fmt.Sprintf("c%02d", i-4))
		}
	}
	return out
}
