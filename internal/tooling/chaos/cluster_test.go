package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/cluster"
	"github.com/agentforeman/foreman/internal/tooling/natstest"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// The cluster's fault tests: foreman processes sharing one build through an
// in-process NATS server (or a cluster of three), with scripted agents in
// an embedded room. `make test` runs a short form; `make chaos` (CHAOS=full)
// or CLUSTER=full the long one, which also prints the failover figures.

func clusterFull() bool { return full() || os.Getenv("CLUSTER") == "full" }

func clusterScale(name string, short, long int) int {
	if v := scale(name, 0, 0); v > 0 {
		return v
	}
	if clusterFull() {
		return long
	}
	return short
}

// scene is one build in a room, led by a cluster of foremen.
type scene struct {
	room   *roomtest.Room
	f      *foremen
	lease  *leases
	lines  *lines
	prober *roomtest.Peer
	comps  []coordinator.Component
	creds  string // the foremen's .creds file, when they sign in with one
}

func newScene(t *testing.T, natsURL string, perProcess func(i int) string, lease time.Duration, procs int, comps []coordinator.Component) *scene {
	return newSceneSigned(t, natsURL, nil, perProcess, lease, procs, comps)
}

// newSecuredScene is a scene on NATS as it runs in production (the example
// configuration: TLS with client certificates, a user per role): the
// foremen sign in as a foreman user, with its .creds file (cluster.creds).
func newSecuredScene(t *testing.T, ns *natstest.Secured, lease time.Duration, procs int, comps []coordinator.Component) *scene {
	cert, key := ns.Client(t, "foreman")
	auth := &cluster.Auth{Creds: ns.Creds(t, "foreman", "foremen"), CA: ns.PKI.CA, Cert: cert, Key: key}
	return newSceneSigned(t, ns.URL(), auth, nil, lease, procs, comps)
}

func newSceneSigned(t *testing.T, natsURL string, auth *cluster.Auth, perProcess func(i int) string, lease time.Duration, procs int, comps []coordinator.Component) *scene {
	room := roomtest.Start(t)
	aud := room.Join(t, "aud")
	s := &scene{room: room, comps: comps}
	if auth != nil {
		s.creds = auth.Creds
	}
	if perProcess == nil {
		perProcess = func(int) string { return natsURL }
	}
	var signIn string
	observer := cluster.Auth{}
	if auth != nil {
		signIn = fmt.Sprintf("  creds: %s\n  tls:\n    ca: %s\n    cert: %s\n    key: %s\n", auth.Creds, auth.CA, auth.Cert, auth.Key)
		observer = *auth
	}
	s.f = newForemenSigned(t, room, perProcess, lease, procs, comps, []string{aud.ID}, signIn)
	s.lines = listen(room.Join(t, "observer"), s.f.id)
	s.prober = room.Join(t, "prober")
	s.lease = followLeases(t, natsURL, observer)
	if os.Getenv("CLUSTER_LOGS") != "" {
		t.Cleanup(func() { t.Log(s.f.logs()) })
	}
	auditor(aud, s.f.id)
	for _, c := range comps {
		builder(room.Join(t, "b-"+c.Name), s.f.id, c.Name)
	}
	return s
}

func (s *scene) startAll() {
	for _, m := range s.f.procs {
		m.start()
	}
}

// leader waits for a process to lead the build and to have said something
// since from.
func (s *scene) leader(t *testing.T, not string, from time.Time) *member {
	t.Helper()
	h, _, ok := s.lease.waitHolder(not, 60*time.Second)
	require.True(t, ok, "nobody took the lease over\n%s", s.f.logs())
	_, ok = s.lines.firstAfter(from, not, 60*time.Second)
	require.True(t, ok, "the new leader %s said nothing\n%s", h, s.f.logs())
	h, _ = s.lease.holder()
	return s.f.member(h)
}

func (s *scene) complete(t *testing.T, timeout time.Duration) {
	t.Helper()
	if _, ok := s.lines.waitFor("COMPLETE shop", time.Time{}, timeout); !ok {
		t.Fatalf("the build did not complete; said:\n%s\nlogs:\n%s", strings.Join(s.lines.texts(), "\n"), s.f.logs())
	}
}

// TestClusterKill9 kills the leading process with SIGKILL at random points
// and starts it again as a standby; a standby takes over each time. NATS
// runs as in production: the example configuration's accounts, a user
// per role signing in with a password from the environment, TLS with
// client certificates. Every
// trial must complete its build with no component owned twice, no
// TIMEOUT, nothing said twice without "may repeat", and no line from a
// process after another took its lease. The failover time is logged: from
// the kill to the new leader's answer to a line said right after it.
func TestClusterKill9(t *testing.T) {
	kills := clusterScale("CLUSTER_KILLS", 2, 50)
	size, procs, lease := 7, 2, time.Second
	if clusterFull() {
		size, procs, lease = 40, 3, cluster.DefaultLease
	}
	rng := rand.New(rand.NewPCG(20, 9))
	var failovers []time.Duration
	done := 0
	for trial := 0; done < kills; trial++ {
		t.Run(fmt.Sprint("trial", trial), func(t *testing.T) {
			ns := natstest.StartSecured(t)
			began := time.Now()
			comps := chain(size)
			if size == 7 {
				comps = bookshop
			}
			s := newSecuredScene(t, ns, lease, procs, comps)
			s.startAll()
			lead := s.leader(t, "", time.Time{})
			for done < kills {
				time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
				if _, over := s.lines.waitFor("COMPLETE", time.Time{}, 0); over {
					break
				}
				_, epoch := s.lease.holder()
				lead.kill()
				killed := time.Now()
				done++
				s.prober.Say(fmt.Sprintf("CLAIM probe%d", done))
				lead.start()
				// The answer to a line said after the kill can only be the
				// new leader's (even if the restarted process won the lease);
				// it may have said other lines before it, so this is the
				// failover time at most.
				first, ok := s.lines.waitFor(fmt.Sprintf("REJECT probe%d ", done), killed, 60*time.Second)
				if _, over := s.lines.waitFor("COMPLETE", time.Time{}, 0); !ok && over {
					done-- // complete just before the kill: a finished build answers nothing
					break
				}
				require.True(t, ok, "no leader spoke after kill %d\n%s", done, s.f.logs())
				failovers = append(failovers, first.At.Sub(killed))
				h, _, ok := s.lease.waitEpoch(epoch, 60*time.Second)
				require.True(t, ok, "no new epoch after kill %d", done)
				lead = s.f.member(h)
			}
			s.complete(t, 3*time.Minute)
			t.Logf("%d kills so far; this build complete after %v", done, time.Since(began).Round(time.Millisecond))
			s.lines.check(t, comps, s.lease, s.f)
			assert.False(t, s.f.logsContain(natstest.Seed(t, s.creds)), "the NATS user's seed is in a log")
			// Its own stamp: the leaders' logs end at one leader.
			for _, m := range s.f.procs {
				m.kill()
			}
		})
		if t.Failed() {
			break
		}
	}
	t.Logf("%d kills of the leader (lease %v, %d processes): failover to the new leader's answer to a line said after the kill: p50 %v, p99 %v, max %v",
		len(failovers), lease, procs, percentile(failovers, 50).Round(time.Millisecond),
		percentile(failovers, 99).Round(time.Millisecond), percentile(failovers, 100).Round(time.Millisecond))
}

// TestClusterSIGSTOP stops the leader past its lease, lets a standby take
// over, then wakes it: the woken process must not say one line, and
// stands by again.
func TestClusterSIGSTOP(t *testing.T) {
	for trial := range clusterScale("CLUSTER_TRIALS", 1, 5) {
		t.Run(fmt.Sprint("trial", trial), func(t *testing.T) {
			ns := natstest.Start(t)
			lease := time.Second
			s := newScene(t, ns.URL(), nil, lease, 2, bookshop)
			s.startAll()
			old := s.leader(t, "", time.Time{})
			time.Sleep(time.Duration(100+rand.IntN(900)) * time.Millisecond) // somewhere in the build
			old.signal(syscall.SIGSTOP)
			stopped := time.Now()
			s.prober.Say("CLAIM probe1")
			s.leader(t, old.name, stopped)
			old.signal(syscall.SIGCONT)
			woke := time.Now()
			s.prober.Say("CLAIM probe2")
			s.complete(t, 2*time.Minute)
			for _, l := range s.lines.said() {
				if l.Name == old.name && l.At.After(woke) {
					t.Errorf("the deposed leader said %q after it woke", l.Text)
				}
			}
			s.lines.check(t, bookshop, s.lease, s.f)
			assert.True(t, old.running(), "the woken process stands by again")
		})
	}
}

// TestClusterCutFromNATS parts the leader from NATS but not from the room:
// it goes silent before its lease can lapse, a standby takes over, and once
// NATS is back the old leader stands by.
func TestClusterCutFromNATS(t *testing.T) {
	for trial := range clusterScale("CLUSTER_TRIALS", 1, 5) {
		t.Run(fmt.Sprint("trial", trial), func(t *testing.T) {
			ns := natstest.Start(t)
			proxies := []*natstest.Proxy{natstest.NewProxy(t, ns.URL()), natstest.NewProxy(t, ns.URL())}
			lease := time.Second
			s := newScene(t, ns.URL(), func(i int) string { return proxies[i].URL() }, lease, 2, bookshop)
			s.startAll()
			old := s.leader(t, "", time.Time{})
			time.Sleep(time.Duration(100+rand.IntN(900)) * time.Millisecond)
			i := 0
			if old.name == "p2" {
				i = 1
			}
			proxies[i].Cut()
			cut := time.Now()
			s.prober.Say("CLAIM probe1")
			s.leader(t, old.name, cut)
			for _, l := range s.lines.said() {
				if l.Name == old.name && l.At.After(cut.Add(lease)) {
					t.Errorf("the leader cut off from NATS said %q %v after the cut", l.Text, l.At.Sub(cut))
				}
			}
			proxies[i].Restore()
			s.complete(t, 2*time.Minute)
			s.lines.check(t, bookshop, s.lease, s.f)
		})
	}
}

// TestClusterNATSLeaderKilled runs the build on a NATS cluster of three with
// three replicas, and stops JetStream's leader node mid-build, then starts
// it again: the build goes on and completes.
func TestClusterNATSLeaderKilled(t *testing.T) {
	if !clusterFull() {
		t.Skip("the three-node NATS cluster runs in the long form (make chaos, or CLUSTER=full)")
	}
	for trial := range clusterScale("CLUSTER_TRIALS", 1, 5) {
		t.Run(fmt.Sprint("trial", trial), func(t *testing.T) {
			nc := natstest.StartCluster(t)
			s := newScene(t, nc.URL(), nil, cluster.DefaultLease, 2, bookshop)
			for _, m := range s.f.procs {
				data, err := os.ReadFile(m.config)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(m.config, []byte(strings.Replace(string(data), "cluster:\n", "cluster:\n  replicas: 3\n", 1)), 0o600))
			}
			s.startAll()
			s.leader(t, "", time.Time{})
			time.Sleep(time.Second)
			n := nc.WaitLeader()
			n.Stop()
			t.Logf("stopped %s, JetStream's leader", n.Name())
			s.prober.Say("CLAIM probe1")
			nc.WaitLeader()
			time.Sleep(2 * time.Second)
			n.Start()
			s.complete(t, 3*time.Minute)
			s.lines.check(t, bookshop, s.lease, s.f)
		})
	}
}

// TestClusterStandbyWithAnotherConfig: a standby whose config differs from
// the leader's refuses, with one line saying why; the leader goes on.
func TestClusterStandbyWithAnotherConfig(t *testing.T) {
	ns := natstest.Start(t)
	s := newScene(t, ns.URL(), nil, time.Second, 2, bookshop)
	p1, p2 := s.f.procs[0], s.f.procs[1]
	p1.start()
	s.leader(t, "", time.Time{})
	p2.write(s.room, ns.URL(), time.Second, bookshop[:3], nil, "")
	p2.start()
	code, log, ok := p2.exited(60 * time.Second)
	require.True(t, ok, "the standby with another config kept running\n%s", s.f.logs())
	assert.NotZero(t, code)
	assert.Contains(t, log, "is not the one its leader runs")
	s.complete(t, 2*time.Minute)
	assert.True(t, p1.running())
}

// TestClusterDeletedByHand: the build's stream, then the lease bucket,
// deleted under running foremen: each refuses clearly and exits, as a
// foreman whose journal was lost does; none starts the build over.
func TestClusterDeletedByHand(t *testing.T) {
	for _, what := range []string{"stream", "leases"} {
		t.Run(what, func(t *testing.T) {
			ns := natstest.Start(t)
			s := newScene(t, ns.URL(), nil, time.Second, 2, bookshop)
			s.startAll()
			s.leader(t, "", time.Time{})
			nc, err := nats.Connect(ns.URL())
			require.NoError(t, err)
			defer nc.Close()
			js, err := jetstream.New(nc)
			require.NoError(t, err)
			ctx := context.Background()
			if what == "stream" {
				require.NoError(t, js.DeleteStream(ctx, cluster.StreamName("shop")))
			} else {
				require.NoError(t, js.DeleteKeyValue(ctx, cluster.LeaseBucket))
			}
			s.prober.Say("CLAIM probe1")
			for _, m := range s.f.procs {
				code, log, ok := m.exited(60 * time.Second)
				require.True(t, ok, "%s kept running\n%s", m.name, s.f.logs())
				assert.NotZero(t, code)
				assert.Contains(t, log, "deleted by hand", m.name)
			}
			for _, l := range s.lines.said() {
				assert.NotContains(t, l.Text, "TASKS c", "no new build")
			}
		})
	}
}

// TestClusterHandOver stops the leader with SIGTERM: it sends what is
// queued, releases the lease, and a standby takes over at once, without
// waiting the lease out. Logged: from the signal to the new leader's lease,
// and to its answer to a line said once it holds it.
func TestClusterHandOver(t *testing.T) {
	ns := natstest.Start(t)
	s := newScene(t, ns.URL(), nil, cluster.DefaultLease, 2, bookshop)
	s.startAll()
	var taken, answered []time.Duration
	lead := s.leader(t, "", time.Time{})
	for i := range clusterScale("CLUSTER_HANDOVERS", 1, 5) {
		if _, over := s.lines.waitFor("COMPLETE", time.Time{}, 0); over {
			break
		}
		for _, m := range s.f.procs {
			require.True(t, m.standingBy(30*time.Second), "%s never joined the pool", m.name)
		}
		_, epoch := s.lease.holder()
		lead.signal(syscall.SIGTERM)
		stopped := time.Now()
		h, _, ok := s.lease.waitEpoch(epoch, 30*time.Second)
		require.True(t, ok, "nobody took the lease over\n%s", s.f.logs())
		taken = append(taken, time.Since(stopped))
		s.prober.Say(fmt.Sprintf("CLAIM handover%d", i))
		answer, ok := s.lines.waitFor(fmt.Sprintf("REJECT handover%d ", i), stopped, 60*time.Second)
		require.True(t, ok, "nobody answered after the hand-over\n%s", s.f.logs())
		answered = append(answered, answer.At.Sub(stopped))
		code, _, ok := lead.exited(30 * time.Second)
		require.True(t, ok, "the leader did not stop on SIGTERM")
		assert.Zero(t, code)
		lead.start()
		lead = s.f.member(h)
	}
	s.complete(t, 2*time.Minute)
	s.lines.check(t, bookshop, s.lease, s.f)
	t.Logf("%d hand-overs on SIGTERM (lease %v): the lease taken p50 %v, max %v; the new leader's answer p50 %v, max %v",
		len(taken), cluster.DefaultLease, percentile(taken, 50).Round(time.Millisecond), percentile(taken, 100).Round(time.Millisecond),
		percentile(answered, 50).Round(time.Millisecond), percentile(answered, 100).Round(time.Millisecond))
}
