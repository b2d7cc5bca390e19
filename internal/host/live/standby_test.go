package live

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/tooling/natstest"
	"github.com/agentforeman/foreman/internal/worker"
)

// A standby host (cluster.nats set): two foreman host processes for one
// build, from one config and one key, share the build's host lease
// through NATS; only the leader is in the room. NATS runs as in
// production: operator mode, each process signing in with a .creds file,
// over TLS with a client certificate.

// testLease is the hosts' lease in the tests where a takeover the test did
// not cause would break what it checks: long enough that a loaded machine
// does not lose one between renewals (every half second).
const testLease = 2 * time.Second

// newClusterWorld is a world whose hosts run in a cluster with lease.
func newClusterWorld(t *testing.T, o worldOptions, lease time.Duration) *world {
	w, _ := newClusterWorldNATS(t, o, lease)
	return w
}

// newClusterWorldNATS is newClusterWorld, and its NATS server.
func newClusterWorldNATS(t *testing.T, o worldOptions, lease time.Duration) (*world, *natstest.Secured) {
	t.Helper()
	op := natstest.StartSecured(t)
	cert, key := op.Client(t, "host")
	// The host counts results only from the workers natstest makes
	// (host.workers: the extra text follows the host section).
	o.extra = "  workers: " + op.Trust + "\n" + fmt.Sprintf("cluster:\n  nats: %s\n  lease: %s\n  creds: %s\n  tls:\n    ca: %s\n    cert: %s\n    key: %s\n",
		op.URL(), lease, op.Creds(t, "host", "host"), op.PKI.CA, cert, key)
	w := newWorld(t, o)
	w.op = op
	if !o.ownWorkers {
		// The checks of a host in a cluster run on workers: one here, in
		// this process, with a slot for each check the host may run.
		w.startWorker("w0", func(c *config.Config, _ *worker.Options) {
			if c != nil {
				c.Worker.Parallel = max(o.maxParallel, 1)
			}
		})
	}
	return w, op
}

// workerAuth is what worker id of the standby world signs in with: a
// worker user of its own, as foreman nats creds makes it.
func (w *world) workerAuth(id string) (creds, cert, key string) {
	cert, key = w.op.Client(w.t, id)
	return w.op.Creds(w.t, "worker", id), cert, key
}

// hostProc is one host process of the cluster: the world's config, with
// its own display name (so the room shows which process said a line) and
// cluster id.
type hostProc struct {
	w      *world
	name   string
	env    []string
	cmd    *exec.Cmd
	done   chan struct{}
	starts int
}

func (w *world) clusterHost(name string, env ...string) *hostProc {
	h := &hostProc{w: w, name: name, env: env}
	w.t.Cleanup(h.kill)
	w.clusterHosts = append(w.clusterHosts, h)
	return h
}

func (h *hostProc) logPath(i int) string {
	return filepath.Join(h.w.dir, fmt.Sprintf("host-%s-%d.log", h.name, i))
}

func (h *hostProc) start() {
	h.w.t.Helper()
	h.starts++
	logf, err := os.Create(h.logPath(h.starts))
	require.NoError(h.w.t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FOREMAN_HOST_TEST_CONFIG="+h.w.cfgPath, "FOREMAN_HOST_NAME="+h.name, "FOREMAN_CLUSTER_ID="+h.name)
	cmd.Env = append(cmd.Env, h.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(h.w.t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	h.cmd, h.done = cmd, done
}

func (h *hostProc) running() bool {
	if h.done == nil {
		return false
	}
	select {
	case <-h.done:
		return false
	default:
		return true
	}
}

// kill ends the process with SIGKILL: nothing of it runs after.
func (h *hostProc) kill() {
	if h.running() {
		_ = h.cmd.Process.Kill()
		<-h.done
	}
}

func (h *hostProc) log() string {
	data, _ := os.ReadFile(h.logPath(h.starts))
	return string(data)
}

// standingBy waits until the process stands by for the host lease.
func (h *hostProc) standingBy() {
	h.w.t.Helper()
	require.Eventually(h.w.t, func() bool { return strings.Contains(h.log(), "standing by for the build's host lease") },
		time.Minute, 10*time.Millisecond, "%s never stood by:\n%s", h.name, h.log())
}

// leader waits for a host line said after from by a process other than
// not, and names it.
func (w *world) leader(not string, from time.Time) string {
	w.t.Helper()
	var name string
	require.Eventually(w.t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, l := range w.lines {
			if l.From == w.host && l.Name != not && l.At.After(from) {
				name = l.Name
				return true
			}
		}
		return false
	}, 2*time.Minute, 10*time.Millisecond, "no host spoke after %s; the room said:\n%s%s", from.Format("15:04:05.000"), w.dump(), w.clusterLogs())
	return name
}

// clusterLogs is what each cluster host process logged, for a failure.
func (w *world) clusterLogs() string {
	var b strings.Builder
	for _, h := range w.clusterHosts {
		fmt.Fprintf(&b, "\n%s (%d starts):\n%s", h.name, h.starts, h.log())
	}
	return b.String()
}

// hostLines are the host's lines with the process that said each.
func (w *world) hostLines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, l := range w.lines {
		if l.From == w.host {
			out = append(out, l.At.Format("15:04:05.000")+" "+l.Name+": "+l.Text)
		}
	}
	return out
}

// verdictsOnce: no verdict (CI, MERGED) said twice, whichever process
// said it.
func (w *world) verdictsOnce() {
	w.t.Helper()
	seen := map[string]int{}
	for _, l := range w.said(w.host, "") {
		if strings.HasPrefix(l, "CI ") || strings.HasPrefix(l, "MERGED ") {
			seen[l]++
		}
	}
	for l, n := range seen {
		assert.Equal(w.t, 1, n, "said %d times: %q\n%s", n, l, strings.Join(w.hostLines(), "\n"))
	}
}

// landedOnce: each component's work is on main's first-parent line once.
func (w *world) landedOnce(comps ...string) {
	w.t.Helper()
	graph := w.git("log", "--graph", "--oneline", "main")
	for _, c := range comps {
		tip := ""
		for _, b := range []string{"b1", "b2", "b3"} {
			if oid, err := w.repo.RevParse(bg, "refs/heads/"+b+"/"+c); err == nil && oid != "" {
				tip = oid
			}
		}
		require.NotEmpty(w.t, tip, "no branch for %s", c)
		n := 0 // main's first-parent commits that are the branch (a fast-forward) or merge it
		for _, line := range strings.Split(strings.TrimSpace(w.git("log", "--first-parent", "--format=%H %P", "main")), "\n") {
			fs := strings.Fields(line)
			if fs[0] == tip || len(fs) > 2 && slices.Contains(fs[2:], tip) {
				n++
			}
		}
		assert.Equal(w.t, 1, n, "%s landed %d times:\n%s", c, n, graph)
	}
}

// spokeOnlyWhileLeading: every host line before the kill is the first
// leader's, every one after it the second's: the standby said nothing
// while it stood by, and it joined the room only once it led.
func (w *world) spokeOnlyWhileLeading(first, second string, killed time.Time, standby *hostProc) {
	w.t.Helper()
	w.mu.Lock()
	for _, l := range w.lines {
		if l.From != w.host {
			continue
		}
		want := first
		if l.At.After(killed) {
			want = second
		}
		assert.Equal(w.t, want, l.Name, "%q said at %s", l.Text, l.At.Format("15:04:05.000"))
	}
	w.mu.Unlock()
	log := standby.log()
	led, joined := strings.Index(log, "leading the build"), strings.Index(log, "in the room")
	assert.True(w.t, led >= 0 && joined > led, "the standby joined the room only once it led:\n%s", log)
}

// The test (items 1 to 3): two hosts and three worker processes;
// kill -9 of a worker holding a car's check and of the leading host
// mid-train, five cars checking (held at the gate). The standby takes the
// lease once it lapses, reads the ledger, withdraws the dead host's jobs
// (else they would hold the slots of the two workers left until the gate
// opens, and the new train's five checks could not all start), makes the
// train again from foreman's STATUS, and the workers check the cars again; d, which fails beside b, steps back once; main
// ends holding every component once, every tree it held passed, and no
// verdict was said twice.
func TestStandbyTakesOverMidTrain(t *testing.T) {
	w := newClusterWorld(t, worldOptions{components: []string{"a", "b", "c", "d", "e", "f"}, mode: "gate", maxParallel: 6,
		rules: "  max_claims_per_agent: 2\n", ownWorkers: true}, testLease)
	kill := map[string]func(){}
	for _, id := range []string{"w1", "w2", "w3"} {
		kill[id] = w.startWorkerProcess(id, "FOREMAN_WORKER_PARALLEL=3") // two are enough for the five cars
	}
	h1, h2 := w.clusterHost("h1"), w.clusterHost("h2")
	h1.start()
	require.Equal(t, "h1", w.leader("", time.Time{}))
	q := w.jobQueue()
	h2.start()
	h2.standingBy()
	sixInTheTrain(t, w)
	for _, c := range []string{"b", "c", "d", "e", "f"} {
		w.waitStarted(c) // in the workers' hands: the two left hold the checks of three or four
	}

	kill[w.workerWith(q, "b")]()
	h1.kill()
	killed := time.Now()
	w.closeGateFiles("b", "c", "d", "e", "f")
	require.Equal(t, "h2", w.leader("h1", killed))
	for _, c := range []string{"b", "c", "d", "e", "f"} {
		w.waitStarted(c) // the train made again, its cars checked again
	}
	w.openGate()
	w.awaitAll(w.foreman, "FIX d ", "OK MERGED b", "OK MERGED c", "OK MERGED e", "OK MERGED f")
	assert.Contains(t, w.said(w.foreman, "FIX d ")[0], "d does not work with b")
	w.commit("b2/d", "b2/d", map[string]string{"d": "d, fixed\n"})
	w.say("b2", "READY d b2/d")
	w.expect(w.foreman, "REVIEW d")
	w.say("aud", "AUDIT d PASS")
	w.expect(w.foreman, "OK MERGED d")

	assert.Equal(t, "a\nb\nc\nd\ne\nf\n", w.git("ls-tree", "--name-only", "main"))
	w.landedOnce("a", "b", "c", "e", "f")
	w.everyLandedTreePassed()
	w.verdictsOnce()
	assert.Len(t, w.said(w.foreman, "FIX d "), 1)
	w.spokeOnlyWhileLeading("h1", "h2", killed, h2)
	if os.Getenv("HOST_LOGS") != "" {
		t.Logf("the host said:\n%s\nh2:\n%s", strings.Join(w.hostLines(), "\n"), h2.log())
		for _, id := range []string{"w1", "w2", "w3"} {
			data, _ := os.ReadFile(filepath.Join(w.dir, "worker-"+id+".log"))
			t.Logf("worker %s:\n%s", id, data)
		}
	}
}

// Items 3 and 5: kill -9 of the leading host between the compare-and-swap
// that lands a component and its MERGED. The standby finds the work on
// main already, says MERGED once, and lands nothing again. Each round the
// killed process comes back as the standby, and the next component is
// killed mid-landing on whichever leads. The takeover time, from the kill
// to the standby's MERGED in the room, is logged over the kills:
// HOST_KILLS=20 HOST_LEASE=3s for the figure in docs/RELIABILITY.md.
func TestStandbyLandsOnceAfterAKillMidLanding(t *testing.T) {
	kills := envInt("HOST_KILLS", 2)
	lease := testLease
	if d, err := time.ParseDuration(os.Getenv("HOST_LEASE")); err == nil {
		lease = d
	}
	comps := make([]string, kills)
	for i := range comps {
		comps[i] = fmt.Sprintf("c%02d", i)
	}
	w := newClusterWorld(t, worldOptions{components: comps, maxParallel: 2, rules: fmt.Sprintf("  max_claims_per_agent: %d\n", kills)}, lease)
	stall := filepath.Join(w.dir, "stalled")
	hosts := []*hostProc{w.clusterHost("h1", "FOREMAN_HOST_TEST_STALL_LANDING="+stall), w.clusterHost("h2", "FOREMAN_HOST_TEST_STALL_LANDING="+stall)}
	hosts[0].start()
	lead := hosts[0]
	require.Equal(t, "h1", w.leader("", time.Time{}))
	hosts[1].start()
	var took []time.Duration
	for i, c := range comps {
		standby := hosts[1]
		if lead == hosts[1] {
			standby = hosts[0]
		}
		standby.standingBy()
		w.claim("b1", c)
		w.commit("b1/"+c, "main", map[string]string{c: c + "\n"})
		w.say("b1", "READY "+c+" b1/"+c)
		w.expect(w.host, "CI "+c+" PASS ")
		w.expect(w.foreman, "REVIEW "+c)
		before := w.tip("main")
		_ = os.Remove(stall)
		w.say("aud", "AUDIT "+c+" PASS")
		require.Eventually(t, func() bool { _, err := os.Stat(stall); return err == nil }, 2*time.Minute, 5*time.Millisecond,
			"%s never landed; the room said:\n%s", c, w.dump())
		landed := w.tip("main")
		require.NotEqual(t, before, landed)
		lead.kill()
		killed := time.Now()
		merged := w.expect(w.host, "MERGED "+c)
		took = append(took, w.saidAt(w.host, merged).Sub(killed))
		w.expect(w.foreman, "OK MERGED "+c)
		assert.Equal(t, landed, w.tip("main"), "round %d: nothing landed again", i)
		assert.Contains(t, w.said(w.host, "queue: "+c+" "), "queue: "+c+" was already on main at "+landed+"; receipt: git notes --ref foreman show "+landed[:12])
		lead.start() // the killed process stands by again
		lead = standby
	}
	w.verdictsOnce()
	w.landedOnce(comps...)
	for _, c := range comps {
		assert.Len(t, w.said(w.host, "MERGED "+c), 1)
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	p := func(q float64) time.Duration { return took[int(float64(len(took)-1)*q)].Round(time.Millisecond) }
	t.Logf("standby host: %d kills mid-landing (lease %v): from kill -9 to the standby's MERGED, p50 %v, p99 %v, max %v",
		len(took), lease, p(0.5), p(0.99), p(1))
}

// firstHostLineAfter is when the room heard the host's first line after t.
func (w *world) firstHostLineAfter(t time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range w.lines {
		if l.From == w.host && l.At.After(t) {
			return l.At
		}
	}
	return time.Time{}
}

// saidAt is when the room heard line from sender (its first time).
func (w *world) saidAt(sender, line string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range w.lines {
		if l.From == sender && l.Text == line {
			return l.At
		}
	}
	return time.Time{}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func (h *hostProc) signal(s syscall.Signal) { _ = h.cmd.Process.Signal(s) }

// exited waits for the process to end and says how.
func (h *hostProc) exited() (int, bool) {
	select {
	case <-h.done:
		return h.cmd.ProcessState.ExitCode(), true
	case <-time.After(time.Minute):
		return 0, false
	}
}

// SIGTERM hands the build over at once: the leader stops its jobs, lets
// the repository go and releases the lease, and the standby leads without
// waiting the lease out (a lease of 30 s here: a lapse would not come
// before the deadline).
func TestStandbyHandOverOnSIGTERM(t *testing.T) {
	w := newClusterWorld(t, worldOptions{}, 30*time.Second)
	h1, h2 := w.clusterHost("h1"), w.clusterHost("h2")
	h1.start()
	require.Equal(t, "h1", w.leader("", time.Time{}))
	h2.start()
	h2.standingBy()
	h1.signal(syscall.SIGTERM)
	stopped := time.Now()
	code, ok := h1.exited()
	require.True(t, ok, "h1 did not stop on SIGTERM:\n%s", h1.log())
	assert.Zero(t, code, h1.log())
	var name string
	require.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, l := range w.lines {
			if l.From == w.host && l.At.After(stopped) {
				name = l.Name
				return true
			}
		}
		return false
	}, 20*time.Second, 10*time.Millisecond, "the standby did not take the build over at once:\n%s", h2.log())
	assert.Equal(t, "h2", name)
	w.claim("b1", "db")
	w.commit("b1/db", "main", map[string]string{"db": "db\n"})
	w.say("b1", "READY db b1/db")
	w.expect(w.host, "CI db PASS ")
	w.say("aud", "AUDIT db PASS")
	w.expect(w.host, "MERGED db")
	w.verdictsOnce()
}

// carAtTheGate starts h1, which leads, and h2, which stands by; then db
// is checked and approved, and its car, checked again because main moved,
// waits at the gate.
func (w *world) carAtTheGate() (h1, h2 *hostProc) {
	w.t.Helper()
	h1, h2 = w.clusterHost("h1"), w.clusterHost("h2")
	h1.start()
	require.Equal(w.t, "h1", w.leader("", time.Time{}))
	h2.start()
	h2.standingBy()
	w.openGate()
	w.claim("b1", "db")
	w.commit("b1/db", "main", map[string]string{"db": "db\n"})
	w.say("b1", "READY db b1/db")
	w.expect(w.host, "CI db PASS ")
	w.expect(w.foreman, "REVIEW db")
	w.commit("main", "main", map[string]string{"hotfix": "x\n"}) // main moves: db's car is checked again before it lands
	w.closeGate("db")
	w.say("aud", "AUDIT db PASS")
	w.waitStarted("db")
	return h1, h2
}

// A leader stopped (SIGSTOP) past its lease is deposed: the standby takes
// the lease and waits for the repository, which the stopped process still
// holds on this machine; woken, the old leader finds itself deposed, says
// nothing, lands nothing, stops its jobs and lets the repository go; the
// new leader checks the car again and lands it once. The woken process
// stands by again.
func TestDeposedHostGoesSilent(t *testing.T) {
	w := newClusterWorld(t, worldOptions{mode: "gate"}, testLease)
	h1, h2 := w.carAtTheGate()

	h1.signal(syscall.SIGSTOP)
	stopped := time.Now()
	require.Eventually(t, func() bool { return strings.Contains(h2.log(), "waiting for the repository's host lock") },
		time.Minute, 10*time.Millisecond, "the standby never took the lease:\n%s", h2.log())
	w.closeGateFiles("db")
	h1.signal(syscall.SIGCONT)
	woke := time.Now()
	require.Equal(t, "h2", w.leader("h1", stopped))
	w.waitStarted("db")
	w.openGate()
	w.expect(w.host, "MERGED db")
	w.expect(w.foreman, "OK MERGED db")
	w.mu.Lock()
	for _, l := range w.lines {
		if l.From == w.host && l.Name == "h1" && l.At.After(stopped) {
			t.Errorf("the deposed host said %q %v after it was stopped (woken %v after)", l.Text, l.At.Sub(stopped), l.At.Sub(woke))
		}
	}
	w.mu.Unlock()
	w.landedOnce("db")
	w.verdictsOnce()
	w.everyLandedTreePassed()
	require.Eventually(t, func() bool { return strings.Contains(h1.log(), "no longer leading the build; standing by") },
		time.Minute, 10*time.Millisecond, "the woken host did not stand by:\n%s", h1.log())
	assert.True(t, h1.running())
}

// A standby whose config for the build is not its leader's (other checks,
// another limit) will not stand by for it: one line, and it exits.
func TestStandbyWithAnotherConfigRefuses(t *testing.T) {
	w := newClusterWorld(t, worldOptions{}, time.Second)
	h1, h2 := w.clusterHost("h1"), w.clusterHost("h2", "FOREMAN_HOST_MAX_PARALLEL=3")
	h1.start()
	require.Equal(t, "h1", w.leader("", time.Time{}))
	h2.start()
	code, ok := h2.exited()
	require.True(t, ok, "the standby with another config kept running:\n%s", strings.ReplaceAll(h2.log(), "\n", "\n>> "))
	assert.NotZero(t, code)
	assert.Contains(t, h2.log(), "host: build shop: this host's config (fingerprint ")
	assert.Contains(t, h2.log(), "is not the one its leading host runs")
	assert.True(t, h1.running())
}

// NATS restarted while the host leads with a car at the gate, down longer
// than the lease: the host goes silent (it cannot renew), and once NATS is
// back a host leads again at the next epoch (the same process, or its
// standby), makes the train again and lands the car once.
func TestHostRidesOutANATSRestart(t *testing.T) {
	w, ns := newClusterWorldNATS(t, worldOptions{mode: "gate"}, time.Second)
	h1, h2 := w.carAtTheGate()

	ns.Stop()
	down := time.Now()
	require.Eventually(t, func() bool { return strings.Contains(h1.log(), "no longer leading the build") },
		time.Minute, 10*time.Millisecond, "h1 kept leading without NATS:\n%s", h1.log())
	w.closeGateFiles("db")
	ns.Start()
	w.leader("", down)
	t.Logf("NATS stopped for %v (lease 1s): from the stop to the new leader's first line, %v",
		time.Since(down).Round(time.Millisecond), w.firstHostLineAfter(down).Sub(down).Round(time.Millisecond))
	w.waitStarted("db")
	w.openGate()
	w.expect(w.host, "MERGED db")
	w.expect(w.foreman, "OK MERGED db")
	w.landedOnce("db")
	w.verdictsOnce()
	w.everyLandedTreePassed()
	assert.True(t, h1.running() && h2.running(), "both stand by or lead again")
	if os.Getenv("HOST_LOGS") != "" {
		t.Logf("down at %s; the host said:\n%s\nh1:\n%s\nh2:\n%s", down.Format("15:04:05.000"), strings.Join(w.hostLines(), "\n"), h1.log(), h2.log())
	}
}

// Hole 2 of "Only approved, tested trees land": SIGTERM reaches the
// leading host while it lands db; the landing is recorded (the pass of db
// with it) and MERGED is never said, for the host is stopping. The builder
// pushes to its branch after the approval. The standby leads, learns from
// foreman that db is approved, and must not check and land what the
// branch holds now, which nobody reviewed: its records hold the approved
// commit, which it finds on main, and it says MERGED.
func TestAHandOverAfterALandingLandsNothingUnreviewed(t *testing.T) {
	w := newClusterWorld(t, worldOptions{components: []string{"db"}}, 30*time.Second)
	held := filepath.Join(w.dir, "held")
	h1, h2 := w.clusterHost("h1", "FOREMAN_HOST_TEST_HOLD_LANDING="+held), w.clusterHost("h2")
	h1.start()
	require.Equal(t, "h1", w.leader("", time.Time{}))
	h2.start()
	h2.standingBy()
	w.claim("b1", "db")
	w.commit("b1/db", "main", map[string]string{"db": "db\n"})
	w.say("b1", "READY db b1/db")
	w.expect(w.host, "CI db PASS ")
	w.expect(w.foreman, "REVIEW db")
	w.say("aud", "AUDIT db PASS")
	require.Eventually(t, func() bool { _, err := os.Stat(held); return err == nil }, 2*time.Minute, 5*time.Millisecond,
		"db never landed; the room said:\n%s", w.dump())
	landed := w.tip("main")
	unreviewed := w.commit("b1/db", "b1/db", map[string]string{"db": "db, and what nobody reviewed\n"})

	h1.signal(syscall.SIGTERM)
	stopped := time.Now()
	code, ok := h1.exited()
	require.True(t, ok, "h1 did not stop on SIGTERM:\n%s", h1.log())
	assert.Zero(t, code, h1.log())
	require.Equal(t, "h2", w.leader("h1", stopped))
	w.expect(w.host, "MERGED db")
	w.mu.Lock()
	for _, l := range w.lines {
		if l.From == w.host && l.Text == "MERGED db" {
			assert.Equal(t, "h2", l.Name, "a stopping host says nothing: the standby says MERGED")
		}
	}
	w.mu.Unlock()
	w.expect(w.foreman, "OK MERGED db")
	assert.Equal(t, landed, w.tip("main"), "nothing landed again")
	assert.Equal(t, "db\n", w.git("show", "main:db"), "what was approved, not what was pushed after")
	_, err := w.repo.Git(bg, "merge-base", "--is-ancestor", unreviewed, "main")
	assert.Error(t, err, "the commit pushed after the approval is not on main")
	w.verdictsOnce()
}
