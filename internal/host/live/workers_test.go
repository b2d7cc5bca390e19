package live

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/cluster"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/worker"
	"github.com/agentforeman/foreman/internal/workq"
)

// startWorker runs foreman worker id in this process, from the world's
// configuration changed by each of change, until the test ends or stop is
// called.
func (w *world) startWorker(id string, change ...func(*config.Config, *worker.Options)) (stop func()) {
	c := w.config()
	c.Cluster.ID = id
	c.Worker.Work = filepath.Join(w.dir, "workers", id)
	if w.op != nil {
		c.Cluster.Creds, c.Cluster.TLS.Cert, c.Cluster.TLS.Key = w.workerAuth(id)
	}
	var opts []func(*worker.Options)
	for _, f := range change {
		f(c, nil)
		opts = append(opts, func(o *worker.Options) { f(nil, o) })
	}
	ctx, cancel := context.WithCancel(bg)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := worker.Main(ctx, c, zerolog.Nop(), &strings.Builder{}, opts...); err != nil {
			w.t.Errorf("worker %s: %v", id, err)
		}
	}()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	w.t.Cleanup(stop)
	return stop
}

// startWorkerProcess runs foreman worker id as a process of its own, which
// kill ends with SIGKILL.
func (w *world) startWorkerProcess(id string, env ...string) (kill func()) {
	p := w.startWorkerCmd(id, env...)
	return p.kill
}

// workerProc is a worker process.
type workerProc struct {
	cmd  *exec.Cmd
	kill func()
}

func (w *world) startWorkerCmd(id string, env ...string) *workerProc {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FOREMAN_WORKER_TEST_CONFIG="+w.cfgPath, "FOREMAN_CLUSTER_ID="+id,
		"FOREMAN_WORKER_WORK="+filepath.Join(w.dir, "workers", id))
	if w.op != nil {
		creds, cert, key := w.workerAuth(id)
		cmd.Env = append(cmd.Env, "FOREMAN_CLUSTER_CREDS="+creds, "FOREMAN_CLUSTER_TLS_CERT="+cert, "FOREMAN_CLUSTER_TLS_KEY="+key)
	}
	cmd.Env = append(cmd.Env, env...)
	logf, err := os.OpenFile(filepath.Join(w.dir, "worker-"+id+".log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	require.NoError(w.t, err)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(w.t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	killed := false
	kill := func() {
		if !killed {
			killed = true
			_ = cmd.Process.Kill()
			<-done
		}
	}
	w.t.Cleanup(func() {
		if !killed {
			killed = true
			_ = cmd.Process.Signal(syscall.SIGCONT)
			_ = cmd.Process.Signal(os.Interrupt)
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		}
	})
	return &workerProc{cmd: cmd, kill: kill}
}

// jobQueue opens the cluster's job queue, as foreman cluster status does.
func (w *world) jobQueue() *workq.Queue {
	w.t.Helper()
	var nc *nats.Conn
	var err error
	if w.op != nil {
		cert, key := w.op.Client(w.t, "host")
		nc, err = nats.Connect(w.op.URL(), nats.UserCredentials(w.op.Creds(w.t, "host", "host")), nats.RootCAs(w.op.PKI.CA),
			nats.ClientCert(cert, key), nats.CustomInboxPrefix(cluster.RoleHost.Inbox("")))
	} else {
		nc, err = nats.Connect(w.nats.URL())
	}
	require.NoError(w.t, err)
	w.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(w.t, err)
	var q *workq.Queue
	require.Eventually(w.t, func() bool {
		q, err = workq.Open(bg, js)
		return err == nil
	}, time.Minute, 20*time.Millisecond, "the host never made the job queue")
	return q
}

// workerWith waits until a worker says it has c's job in hand, and names it.
func (w *world) workerWith(q *workq.Queue, c string) string {
	w.t.Helper()
	holder := ""
	require.Eventually(w.t, func() bool {
		workers, _, _, err := q.Status(bg)
		if err != nil {
			return false
		}
		for _, s := range workers {
			for _, j := range s.Jobs {
				if j.Component == c {
					holder = s.ID
					return true
				}
			}
		}
		return false
	}, time.Minute, 20*time.Millisecond, "no worker says it has %s's job", c)
	return holder
}

// The host with workers checks and reports as the host alone does: a
// READY is checked by a worker, in its sandbox, and the verdict names a
// log the host keeps (copied from NATS), holding what the check said.
func TestWorkersCheckAndTheHostReports(t *testing.T) {
	w := newWorld(t, worldOptions{workers: true, maxParallel: 2})
	w.startHost()
	w.startWorker("w1")
	w.startWorker("w2")
	w.claim("b1", "db")
	w.commit("b1/db", "main", map[string]string{"db": "BUG\n"})
	w.say("b1", "READY db b1/db")
	fail := w.expect(w.host, "CI db FAIL ")
	assert.Contains(t, fail, "db holds BUG")
	_, logPath, ok := strings.Cut(fail, "log=")
	require.True(t, ok, fail)
	logPath = strings.Fields(logPath)[0]
	assert.Equal(t, filepath.Join(w.dir, ".foreman", "host", "logs"), filepath.Dir(logPath), "kept with the host's own logs, where the board serves them")
	assert.Contains(t, w.readFile(logPath), "FAIL: db holds BUG")
	assert.Equal(t, "db-1.again1.log", filepath.Base(logPath), "the verdict's is the last try's (host.retries):\n%s", w.dump())
	assert.Contains(t, w.readFile(filepath.Join(filepath.Dir(logPath), "db-1.log")), "FAIL: db holds BUG", "the first try's log kept too")

	w.expect(w.foreman, "FIX db")
	w.commit("b1/db", "b1/db", map[string]string{"db": "db\n"})
	w.say("b1", "READY db b1/db")
	pass := w.expect(w.host, "CI db PASS ")
	assert.Contains(t, w.readFile(w.record), strings.Fields(strings.TrimPrefix(pass, "CI db PASS "))[0], "the worker checked the commit the host names")
	assert.Len(t, w.said(w.host, "CI db"), 2, "one verdict per READY")
}

// Item 1 and the first test: three workers, one killed with
// SIGKILL mid-check. Its job is given to another after the lease and
// reported once; the build ends with the target holding every
// component, every tree it held passed, and no verdict said twice.
func TestThreeWorkersOneKilledMidCheck(t *testing.T) {
	w := newWorld(t, worldOptions{mode: "gate", workers: true, maxParallel: 3})
	w.startHost()
	kill := map[string]func(){}
	for _, id := range []string{"w1", "w2", "w3"} {
		kill[id] = w.startWorkerProcess(id)
	}
	q := w.jobQueue()

	w.claim("b1", "db")
	w.commit("b1/db", "main", map[string]string{"db": "db\n"})
	w.say("b1", "READY db b1/db")
	w.waitStarted("db")
	holder := w.workerWith(q, "db")
	kill[holder]()
	w.closeGateFiles("db")
	w.waitStarted("db") // given to another once the lease ran out
	w.openGate()
	pass := w.expect(w.host, "CI db PASS ")
	w.expect(w.foreman, "REVIEW db")
	commit := strings.Fields(strings.TrimPrefix(pass, "CI db PASS "))[0]
	if sandboxSetting(t) == "on" {
		// A confined check dies with its worker (its namespace's first
		// process goes with it); an unconfined one would run on until the
		// worker's next start pruned it.
		assert.Equal(t, 1, strings.Count(w.readFile(w.record), commit), "the killed check never finished; the one redone passed, once")
	}

	for _, c := range []struct{ builder, name string }{{"b2", "api"}, {"b3", "web"}} {
		w.claim(c.builder, c.name)
		w.commit(c.builder+"/"+c.name, "main", map[string]string{c.name: c.name + "\n"})
		w.say(c.builder, "READY "+c.name+" "+c.builder+"/"+c.name)
	}
	w.awaitAll(w.foreman, "REVIEW api", "REVIEW web")
	for _, c := range []string{"db", "api", "web"} {
		w.say("aud", "AUDIT "+c+" PASS")
	}
	w.awaitAll(w.foreman, "OK MERGED db", "OK MERGED api", "OK MERGED web")

	files := w.git("ls-tree", "-r", "--name-only", "main")
	for _, c := range []string{"db", "api", "web"} {
		assert.Contains(t, files, c, "main holds %s", c)
		assert.Len(t, w.said(w.host, "CI "+c), 1, "one verdict for %s:\n%s", c, w.dump())
		assert.Len(t, w.said(w.host, "MERGED "+c), 1, "%s merged once", c)
	}
	w.everyLandedTreePassed()

	_, hosts, _, err := q.Status(bg)
	require.NoError(t, err)
	require.Len(t, hosts, 1)
	assert.Zero(t, hosts[0].Refused)
}

// worker.parallel: one worker runs that many jobs at once, each in a slot
// of its own.
func TestAWorkerRunsParallelJobs(t *testing.T) {
	w := newWorld(t, worldOptions{mode: "gate", workers: true, maxParallel: 2})
	w.startHost()
	w.startWorker("w1", func(c *config.Config, _ *worker.Options) {
		if c != nil {
			c.Worker.Parallel = 2
		}
	})
	w.claim("b1", "db")
	w.claim("b2", "api")
	w.commit("b1/db", "main", map[string]string{"db": "db\n"})
	w.commit("b2/api", "main", map[string]string{"api": "api\n"})
	w.say("b1", "READY db b1/db")
	w.say("b2", "READY api b2/api")
	w.waitStarted("db")
	w.waitStarted("api") // both at once: the gate is shut
	w.openGate()
	w.awaitAll(w.host, "CI db PASS ", "CI api PASS ")
}

// refuseLanding are rules that let the checks pass as the strict rules
// do and refuse every landing.
type refuseLanding struct{ host.StrictRules }

func (refuseLanding) MayLand(host.Landable) string { return "these rules refuse every landing" }

// The executors decide nothing: with real git and real workers, a core
// whose rules refuse every landing lands nothing, though the workers
// passed the checks and the auditor approved: main never moves, and the
// host says why.
func TestNothingLandsThatTheRulesRefuse(t *testing.T) {
	w := newWorld(t, worldOptions{workers: true})
	w.startHostWith(nil, func(o *Options) { o.Core.Rules = refuseLanding{} })
	w.startWorker("w1")
	main := w.tip("main")
	w.claim("b1", "db")
	w.commit("b1/db", "main", map[string]string{"db": "db\n"})
	w.say("b1", "READY db b1/db")
	w.expect(w.host, "CI db PASS ")
	w.expect(w.foreman, "REVIEW db")
	w.say("aud", "AUDIT db PASS")
	w.expect(w.host, "queue: not landing db: these rules refuse every landing")
	assert.Equal(t, main, w.tip("main"), "nothing landed")
	assert.Empty(t, w.said(w.host, "MERGED db"))
}
