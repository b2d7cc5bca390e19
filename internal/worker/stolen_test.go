package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/host/gitjob"
	"github.com/agentforeman/foreman/internal/host/remote"
	"github.com/agentforeman/foreman/internal/natsauth"
	"github.com/agentforeman/foreman/internal/natsname"
	"github.com/agentforeman/foreman/internal/tooling/natstest"
	"github.com/agentforeman/foreman/internal/workq"
)

// sharedWorker is the worker's permissions as they were before each
// worker had a user and a consumer of its own (one user for every worker,
// any consumer's pulls and acks, the streams' information, the queue's
// names as they are now): the control, what a stolen credential could do
// then.
func sharedWorker() jwt.Permissions {
	var p jwt.Permissions
	p.Pub.Allow.Add("$JS.API.INFO", "$JS.API.STREAM.INFO.FOREMAN_JOBS", "$JS.API.CONSUMER.INFO.FOREMAN_JOBS.*",
		"$JS.API.CONSUMER.CREATE.FOREMAN_JOBS.>", "$JS.API.CONSUMER.DURABLE.CREATE.FOREMAN_JOBS.*",
		"$JS.API.CONSUMER.MSG.NEXT.FOREMAN_JOBS.*", "$JS.ACK.FOREMAN_JOBS.>",
		"$JS.API.STREAM.INFO.KV_FOREMAN_RESULTS", "$JS.API.DIRECT.GET.KV_FOREMAN_RESULTS.>", "$KV.FOREMAN_RESULTS.>",
		"$JS.API.STREAM.INFO.FOREMAN_CHECK_LOGS", "$JS.API.DIRECT.GET.FOREMAN_CHECK_LOGS.>", "foreman-logs.>",
		"$JS.API.STREAM.INFO.KV_FOREMAN_WORKERS", "$KV.FOREMAN_WORKERS.w.>")
	p.Sub.Allow.Add("_INBOX_worker.>")
	return p
}

// arena is a host giving jobs through the example NATS configuration, the
// real worker w1 taking them, and a thief holding worker w2's credentials.
type arena struct {
	t       *testing.T
	guarded bool
	ns      *natstest.Secured
	hjs     jetstream.JetStream
	q       *workq.Queue
	r       *remote.Remote
	repo    *gitrepo.Repo
	commit  string
	gate    string
	thief   *nats.Conn
	tjs     jetstream.JetStream
	refused chan string // what the server refused the thief

	mu      sync.Mutex
	started []workq.Job

	listed  string // what a listing of the results' subjects showed the thief
	stolen  string // a job the thief pulled from another's consumer
	fetched bool
}

func (a *arena) conn(creds, name, inbox string, errs chan<- string) *nats.Conn {
	cert, key := a.ns.Client(a.t, name)
	opts := []nats.Option{nats.UserCredentials(creds), nats.RootCAs(a.ns.PKI.CA), nats.ClientCert(cert, key),
		nats.CustomInboxPrefix(inbox)}
	if errs != nil {
		opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case errs <- err.Error():
			default:
			}
		}))
	}
	nc, err := nats.Connect(a.ns.URL(), opts...)
	require.NoError(a.t, err)
	a.t.Cleanup(nc.Close)
	return nc
}

func newArena(t *testing.T, guarded bool, change ...func(*remote.Options)) *arena {
	t.Helper()
	a := &arena{t: t, guarded: guarded, ns: natstest.StartSecured(t), refused: make(chan string, 64)}
	ctx := context.Background()
	hc := a.conn(a.ns.Creds(t, natsauth.RoleHost, "h1"), "h1", natsname.Inbox(natsauth.RoleHost, "h1"), nil)
	a.hjs, _ = jetstream.New(hc)
	var err error
	a.q, err = workq.Make(ctx, a.hjs, workq.Config{})
	require.NoError(t, err)

	// The victim, w1, and the thief, w2: each a user of its own, or, the
	// control, both with the one shared worker user's permissions.
	w1creds, w2creds := a.ns.Creds(t, natsauth.RoleWorker, "w1"), a.ns.Creds(t, natsauth.RoleWorker, "w2")
	w1inbox, w2inbox := natsname.Inbox(natsauth.RoleWorker, "w1"), natsname.Inbox(natsauth.RoleWorker, "w2")
	if !guarded {
		w1creds, w2creds = a.ns.CredsWith(t, "w1", sharedWorker()), a.ns.CredsWith(t, "w2", sharedWorker())
		w1inbox, w2inbox = "_INBOX_worker", "_INBOX_worker"
		// And the streams as a KV bucket and an object store are made:
		// rollups, deletes and a second write of a key allowed (an
		// administrator's user changes them: the host's may not).
		ac := a.conn(a.ns.CredsWith(t, "admin", jwt.Permissions{}), "admin", "_INBOX_admin", nil)
		ajs, _ := jetstream.New(ac)
		for _, name := range []string{"KV_" + workq.ResultBucket, "KV_" + workq.WorkerBucket, workq.CheckLogStream} {
			s, err := ajs.Stream(ctx, name)
			require.NoError(t, err)
			c := s.CachedInfo().Config
			// Deny delete and purge cannot be taken back: made again.
			require.NoError(t, ajs.DeleteStream(ctx, name))
			c.AllowRollup, c.DenyDelete, c.DenyPurge, c.DiscardNewPerSubject, c.Discard = true, false, false, false, jetstream.DiscardOld
			_, err = ajs.CreateStream(ctx, c)
			require.NoError(t, err)
		}
		a.q, err = workq.Open(ctx, a.hjs) // not Make: it would put them back
		require.NoError(t, err)
	}
	a.thief = a.conn(w2creds, "w2", w2inbox, a.refused)
	a.tjs, _ = jetstream.New(a.thief)

	dir := t.TempDir()
	a.repo, err = gitrepo.Init(ctx, filepath.Join(dir, "repo.git"), "main", true)
	require.NoError(t, err)
	main, _ := a.repo.RevParse(ctx, "refs/heads/main")
	a.commit, err = a.repo.CommitFiles(ctx, main, map[string]string{"db": "broken\n"}, "a change that fails its check",
		gitrepo.Author{Name: "b", Email: "b@x"})
	require.NoError(t, err)
	a.gate = filepath.Join(dir, "gate")
	logs := filepath.Join(dir, "logs")
	require.NoError(t, os.MkdirAll(logs, 0o755))
	ro := remote.Options{Queue: a.q, Repo: a.repo, Serve: "127.0.0.1:0", Build: "shop", Host: "@0123456789abcdef", Name: "host",
		Target: "main", Timeout: 5 * time.Minute, LogLimit: 1 << 20, Logs: logs, Sandbox: workq.Sandbox{Net: "all"},
		// The check fails, once the test opens the gate: a PASS is forged.
		Checks:      [][]string{{"sh", "-c", fmt.Sprintf("while [ ! -e %s ]; do sleep 0.05; done; echo FAIL: db is broken; exit 1", a.gate)}},
		MaxParallel: 2, Lease: 500 * time.Millisecond, Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)}
	if guarded {
		trust, err := workq.OpenTrust(a.ns.Trust)
		require.NoError(t, err)
		ro.Trust = trust
		ro.Claims = func(ctx context.Context) (*jwt.AccountClaims, error) { return natsauth.Claims(ctx, hc) }
	}
	for _, f := range change {
		f(&ro)
	}
	a.r = remote.New(ro)
	require.NoError(t, a.r.Start(ctx, 0))
	t.Cleanup(a.r.Close)

	// The real worker, w1.
	a.worker("w1", w1creds, w1inbox)
	return a
}

// worker starts a real worker named name, signing in with creds, that
// tells the arena each job it starts.
func (a *arena) worker(name, creds, inbox string) {
	t := a.t
	wc := a.conn(creds, name, inbox, nil)
	wjs, _ := jetstream.New(wc)
	seed, err := os.ReadFile(creds)
	require.NoError(t, err)
	kp, _, err := natsauth.Seed(seed)
	require.NoError(t, err)
	uj, err := jwt.ParseDecoratedJWT(seed)
	require.NoError(t, err)
	w, err := New(Options{JS: wjs, ID: name, Work: t.TempDir(), Lease: 500 * time.Millisecond, Unconfined: true, Key: kp, JWT: uj,
		Logger: zerolog.Nop(), Started: func(j workq.Job) {
			a.mu.Lock()
			a.started = append(a.started, j)
			a.mu.Unlock()
		}})
	require.NoError(t, err)
	wctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(wctx) }()
	t.Cleanup(func() { cancel(); <-done; _ = w.Close() })
}

// check has the host check the commit, for run; its verdict comes on the
// channel.
func (a *arena) check(run int) <-chan gitjob.Checked {
	out := make(chan gitjob.Checked, 1)
	go func() {
		c, err := a.r.Check(context.Background(), gitjob.CheckRequest{Job: host.Job{Run: run, Component: "db", Ref: "b1/db"},
			Commit: a.commit, Base: a.commit})
		assert.NoError(a.t, err)
		out <- c
	}()
	return out
}

// running waits for w1 to start the job of run, and returns it.
func (a *arena) running(run int) workq.Job {
	var j workq.Job
	require.Eventually(a.t, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, s := range a.started {
			if s.Run == run {
				j = s
				return true
			}
		}
		return false
	}, time.Minute, 10*time.Millisecond)
	return j
}

// attack is one thing a stolen worker credential tries.
type attack struct {
	name string
	// try does it; what the server refused comes to the arena's refused.
	try func(ctx context.Context, a *arena, j workq.Job) error
	// worked reports whether it did what it meant to.
	worked func(ctx context.Context, a *arena, j workq.Job) bool
	// defence is what stops it when guarded, as docs/NATS.md's table says.
	defence string
	// settled, if set, holds the test until what the attack did has
	// taken its effect on the host, when it worked (before a later
	// attack, a rollup purge, takes it away again).
	settled func(a *arena) bool
}

func attacks(sniffed <-chan *nats.Msg) []attack {
	// A worker's user has no KV handle (that reads the stream's
	// information): it writes its keys as KV does, by publishing.
	put := func(ctx context.Context, a *arena, key, value string, header ...string) error {
		m := nats.NewMsg("$KV." + workq.ResultBucket + "." + key)
		m.Data = []byte(value)
		for i := 0; i+1 < len(header); i += 2 {
			m.Header.Set(header[i], header[i+1])
		}
		_, err := a.tjs.PublishMsg(ctx, m)
		return err
	}
	results := func(ctx context.Context, a *arena, j workq.Job) int {
		all, _ := a.q.Results(ctx, "shop", j.ID)
		return len(all)
	}
	return []attack{
		{name: "read another worker's inbox (its job, its fetch token)", defence: "permissions: each worker subscribes to its own inbox only",
			try: func(context.Context, *arena, workq.Job) error { return nil },
			worked: func(_ context.Context, _ *arena, j workq.Job) bool {
				for {
					select {
					case m := <-sniffed:
						if strings.Contains(string(m.Data), j.Fetch.Token) {
							return true
						}
					default:
						return false
					}
				}
			}},
		{name: "list every build's jobs, words and results (STREAM.INFO with a subjects filter)", defence: "permissions: a worker reads no stream's information",
			try: func(ctx context.Context, a *arena, j workq.Job) error {
				m, err := a.thief.RequestWithContext(ctx, "$JS.API.STREAM.INFO.KV_"+workq.ResultBucket, []byte(`{"subjects_filter":">"}`))
				if err == nil {
					a.listed = string(m.Data)
				}
				return err
			},
			worked: func(_ context.Context, a *arena, j workq.Job) bool {
				return strings.Contains(a.listed, workq.TakenKey("shop", j.ID, "w1"))
			}},
		{name: "answer another worker's delivery (NAK it, and pull the job from its consumer)",
			defence: "permissions: a worker pulls and acks from its own consumer only ($JS.ACK.FOREMAN_JOBS.worker-<id>.>)",
			try: func(ctx context.Context, a *arena, j workq.Job) error {
				c, err := a.hjs.Consumer(ctx, workq.JobStream, workq.WorkerConsumer("w1"))
				if err != nil {
					return err
				}
				info := c.CachedInfo()
				ack := fmt.Sprintf("$JS.ACK.%s.%s.1.%d.%d.%d.0", workq.JobStream, workq.WorkerConsumer("w1"), a.seq(ctx, j),
					info.Delivered.Consumer, time.Now().UnixNano())
				if err := a.thief.Publish(ack, []byte("-NAK")); err != nil {
					return err
				}
				m, err := a.thief.RequestWithContext(ctx, "$JS.API.CONSUMER.MSG.NEXT."+workq.JobStream+"."+workq.WorkerConsumer("w1"),
					[]byte(`{"batch":1,"expires":1000000000}`))
				if err == nil {
					a.stolen = string(m.Data)
				}
				return err
			},
			worked: func(_ context.Context, a *arena, j workq.Job) bool { return strings.Contains(a.stolen, j.ID) }},
		{name: "fetch another worker's commit with its job's token", defence: "the host's git server: a token fetches only with the signature of the worker the job was given to",
			try: func(_ context.Context, a *arena, j workq.Job) error {
				// Not the attacks' two seconds: a fetch that works takes
				// longer than that on a loaded machine; a refused one is
				// answered at once.
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				m, err := gitrepo.InitBare(ctx, filepath.Join(a.t.TempDir(), "thief.git"))
				if err != nil {
					return err
				}
				_, err = m.Fetch(ctx, j.Fetch.URL, j.Fetch.Ref, "refs/stolen", remote.Header(j.Fetch.Token))
				if err == nil {
					a.fetched = true
				}
				return err
			},
			worked: func(context.Context, *arena, workq.Job) bool { return true }},
		{name: "store a PASS under the other worker's name", defence: "permissions: a worker writes keys of its own name only",
			try: func(ctx context.Context, a *arena, j workq.Job) error {
				tree, _ := a.repo.TreeOf(ctx, j.Commit)
				data, _ := json.Marshal(workq.Result{V: workq.Version, Job: j.ID, Worker: "w1", Seq: a.seq(ctx, j), Commit: j.Commit,
					Tree: tree, Outcome: workq.Passed})
				_, err := a.tjs.Publish(ctx, "$KV."+workq.ResultBucket+"."+workq.ResultKey("shop", j.ID, "w1"), data)
				return err
			},
			worked: func(ctx context.Context, a *arena, j workq.Job) bool {
				x, _ := a.q.Result(ctx, "shop", j.ID, "w1")
				return x != nil && x.Outcome == workq.Passed
			},
			settled: func(a *arena) bool { taken, _, _, _ := a.r.Counts(); return taken == 1 }},
		{name: "overwrite its own result", defence: "stream: one message per key, a second refused",
			try: func(ctx context.Context, a *arena, j workq.Job) error {
				key := workq.ResultKey("shop", "1-0-0000000000000000", "w2")
				if err := put(ctx, a, key, `{"outcome":"failed"}`); err != nil {
					return err
				}
				return put(ctx, a, key, `{"outcome":"passed"}`)
			},
			worked: func(ctx context.Context, a *arena, _ workq.Job) bool {
				x, _ := a.q.Result(ctx, "shop", "1-0-0000000000000000", "w2")
				return x != nil && x.Outcome == workq.Passed
			}},
		{name: "delete a result (KV delete)", defence: "stream: a delete marker is a second message on the key, refused",
			try: func(ctx context.Context, a *arena, _ workq.Job) error {
				return put(ctx, a, workq.ResultKey("shop", "1-0-0000000000000000", "w2"), "", "KV-Operation", "DEL")
			},
			worked: func(ctx context.Context, a *arena, _ workq.Job) bool {
				x, _ := a.q.Result(ctx, "shop", "1-0-0000000000000000", "w2")
				return x == nil
			}},
		{name: "purge the results with Nats-Rollup: all", defence: "stream: rollups off",
			try: func(ctx context.Context, a *arena, _ workq.Job) error {
				m := nats.NewMsg("$KV." + workq.ResultBucket + "." + workq.ResultKey("shop", "1-0-0000000000000001", "w2"))
				m.Header.Set("Nats-Rollup", "all")
				_, err := a.tjs.PublishMsg(ctx, m)
				return err
			},
			worked: func(ctx context.Context, a *arena, j workq.Job) bool { return results(ctx, a, j) == 0 }},
		{name: "read the results (another worker's)", defence: "permissions: a worker reads only how the host settled a job",
			try: func(ctx context.Context, a *arena, j workq.Job) error {
				_, err := a.tjs.Conn().Request("$JS.API.DIRECT.GET.KV_"+workq.ResultBucket+".$KV."+workq.ResultBucket+"."+
					workq.TakenKey("shop", j.ID, "w1"), nil, 2*time.Second)
				return err
			},
			worked: func(context.Context, *arena, workq.Job) bool { return true }},
		{name: "re-create worker-w1's consumer with another filter", defence: "permissions: only the host makes consumers (and puts them back)",
			try: func(ctx context.Context, a *arena, _ workq.Job) error {
				_, err := a.tjs.CreateOrUpdateConsumer(ctx, workq.JobStream, jetstream.ConsumerConfig{Durable: workq.WorkerConsumer("w1"),
					FilterSubject: "foreman-jobs.*.none", AckPolicy: jetstream.AckExplicitPolicy})
				return err
			},
			worked: func(ctx context.Context, a *arena, _ workq.Job) bool {
				c, err := a.hjs.Consumer(ctx, workq.JobStream, workq.WorkerConsumer("w1"))
				return err == nil && c.CachedInfo().Config.FilterSubject == "foreman-jobs.*.none"
			}},
		{name: "squat a worker's jobs with a push consumer", defence: "permissions: only the host makes consumers",
			try: func(ctx context.Context, a *arena, _ workq.Job) error {
				_, err := a.tjs.CreateOrUpdateConsumer(ctx, workq.JobStream, jetstream.ConsumerConfig{Durable: "squat",
					FilterSubject: "foreman-jobs.*.w9", DeliverSubject: "_INBOX_worker.squat", AckPolicy: jetstream.AckExplicitPolicy})
				return err
			},
			worked: func(ctx context.Context, a *arena, _ workq.Job) bool {
				_, err := a.hjs.Consumer(ctx, workq.JobStream, "squat")
				return err == nil || errors.Is(err, jetstream.ErrNotPullConsumer)
			}},
	}
}

// seq is the message the job was, as the host gave it: what a thief who
// read the inbox knows.
func (a *arena) seq(ctx context.Context, j workq.Job) uint64 {
	t, _ := a.q.Taken(ctx, "shop", j.ID, "w1")
	if t == nil {
		return 0
	}
	return t.Seq
}

// A stolen worker credential does only that worker's own work. Each attack
// is tried with worker w2's credentials while the real worker w1 runs a
// job whose check fails: with each worker a user of its own, as foreman
// nats creds makes it, and the streams as workq makes them, the server
// refuses it and the host reports w1's FAIL; with the one shared worker
// user's permissions and the streams as a KV bucket is made, each works,
// and the host reports the thief's PASS (or the test proves nothing).
func TestAStolenWorkerCredentialDoesOnlyItsOwnWork(t *testing.T) {
	without, with := map[string]string{}, map[string]string{}
	for _, guarded := range []bool{false, true} {
		name := "shared worker user"
		if guarded {
			name = "a user per worker"
		}
		t.Run(name, func(t *testing.T) {
			a := newArena(t, guarded)
			ctx := context.Background()
			sniffed := make(chan *nats.Msg, 4096)
			victimInbox := natsname.Inbox(natsauth.RoleWorker, "w1") + ".>"
			if !guarded {
				victimInbox = "_INBOX_worker.>"
			}
			sub, err := a.thief.ChanSubscribe(victimInbox, sniffed)
			require.NoError(t, err)
			defer func() { _ = sub.Unsubscribe() }()
			subRefused := ""
			if guarded {
				// The server refuses a subscription after the fact.
				select {
				case subRefused = <-a.refused:
				case <-time.After(30 * time.Second):
					t.Error("the server did not refuse the subscription to another worker's inbox")
				}
			}
			verdict := a.check(1)
			j := a.running(1)
			for i, at := range attacks(sniffed) {
				for len(a.refused) > 0 {
					<-a.refused
				}
				actx, cancel := context.WithTimeout(ctx, 2*time.Second) // a refused request gets no answer
				err := at.try(actx, a, j)
				cancel()
				worked := err == nil && at.worked(ctx, a, j)
				if i == 0 && !guarded && !worked {
					// What the inbox carried comes a moment after the job.
					worked = assert.Eventually(t, func() bool { return at.worked(ctx, a, j) }, 10*time.Second, 20*time.Millisecond)
				}
				if guarded {
					assert.False(t, worked, "%s: it worked with its defence (%s): %v", at.name, at.defence, err)
					why := refusal(err, a)
					if i == 0 {
						why = subRefused
					}
					with[at.name] = "refused (" + at.defence + "): " + why
				} else {
					assert.True(t, worked, "%s: without its defence it must work, or the test proves nothing: %v %s", at.name, err, refusal(nil, a))
					without[at.name] = yes(worked)
					if worked && at.settled != nil {
						require.Eventually(t, func() bool { return at.settled(a) }, time.Minute, 10*time.Millisecond,
							"%s: the host never took what it did", at.name)
					}
				}
			}
			require.NoError(t, os.WriteFile(a.gate, nil, 0o644))
			var c gitjob.Checked
			select {
			case c = <-verdict:
			case <-time.After(2 * time.Minute):
				t.Fatal("the host gave no verdict")
			}
			if guarded {
				assert.False(t, c.Passed, "the real worker's FAIL is the verdict, not the thief's PASS")
				assert.Contains(t, c.Line, "FAIL: db is broken")
				// The real worker still does its job: the next one too.
				next := a.check(2)
				a.running(2)
				select {
				case c = <-next:
					assert.False(t, c.Passed)
				case <-time.After(2 * time.Minute):
					t.Fatal("the host gave no verdict after the attacks")
				}
			} else {
				assert.True(t, c.Passed, "without the defences the thief's PASS is the verdict (the attack the issue found)")
			}
		})
	}
	var table strings.Builder
	table.WriteString("\n| attack with a worker's stolen credentials | without its defence | with it |\n|---|---|---|\n")
	for _, at := range attacks(nil) {
		fmt.Fprintf(&table, "| %s | %s | %s |\n", at.name, without[at.name], with[at.name])
	}
	t.Log(table.String())

	// docs/NATS.md's table is this test's, row for row.
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "NATS.md"))
	require.NoError(t, err)
	_, rows, ok := strings.Cut(string(doc), "| attack with a worker's stolen credentials | without its defence | with it |\n|---|---|---|\n")
	require.True(t, ok, "docs/NATS.md has the table")
	rows, _, _ = strings.Cut(rows, "\n\n")
	var documented []string
	for _, r := range strings.Split(rows, "\n") {
		cells := strings.Split(r, " | ")
		documented = append(documented, strings.ReplaceAll(strings.TrimPrefix(cells[0], "| "), "`", ""))
		assert.Equal(t, "worked", cells[1], r)
	}
	var tested []string
	for _, at := range attacks(nil) {
		tested = append(tested, at.name)
	}
	assert.Equal(t, tested, documented, "docs/NATS.md's rows and the test's attacks")
}

func yes(b bool) string {
	if b {
		return "worked"
	}
	return "failed"
}

// refusal is what the server said of the attack: the permissions
// violation it sent, or the error the request came back with.
func refusal(err error, a *arena) string {
	select {
	case r := <-a.refused:
		return r
	default:
	}
	if err != nil {
		return err.Error()
	}
	return "nothing happened"
}

// foreman nats revoke takes a worker out while it holds a job: the server
// closes its connection (it cannot answer the job, nor sign in again),
// the host reads the revocation (the account's JWT) and gives up on the
// job at once, not after the worker's silence, and the run tried again
// goes to another worker, which does it. Without the host reading the
// revocations (Claims unset: the control), it waits out the worker's
// silence (10 s) before it gives up on the job.
func TestARevokedWorkersJobIsDoneElsewhere(t *testing.T) {
	for _, reads := range []bool{true, false} {
		t.Run(fmt.Sprintf("the host reads the revocations: %v", reads), func(t *testing.T) { revokeMidJob(t, reads) })
	}
}

func revokeMidJob(t *testing.T, reads bool) {
	a := newArena(t, true, func(o *remote.Options) {
		if !reads {
			o.Claims = nil
		}
	})
	ctx := context.Background()
	first := make(chan error, 1)
	go func() {
		_, err := a.r.Check(ctx, gitjob.CheckRequest{Job: host.Job{Run: 1, Component: "db", Ref: "b1/db"}, Commit: a.commit, Base: a.commit})
		first <- err
	}()
	j := a.running(1)
	require.Equal(t, "w1", j.Worker)
	a.worker("w3", a.ns.Creds(t, natsauth.RoleWorker, "w3"), natsname.Inbox(natsauth.RoleWorker, "w3"))

	sysc := a.conn(natsauth.SystemCreds(a.ns.Dir), "sys", "_INBOX_sys", nil)
	accJWT, _, err := natsauth.Revoke(a.ns.Dir, "w1")
	require.NoError(t, err)
	require.NoError(t, natsauth.Push(ctx, sysc, accJWT))
	select {
	case err := <-first:
		require.Error(t, err)
		if reads {
			assert.Contains(t, err.Error(), "worker w1: it is revoked (foreman nats revoke)")
		} else {
			assert.Contains(t, err.Error(), "worker w1 has not been heard from for", "no revocation read: its silence waited out")
		}
	case <-time.After(time.Minute):
		t.Fatal("the host went on waiting for the revoked worker")
	}
	require.NoError(t, os.WriteFile(a.gate, nil, 0o644))
	c, err := a.r.Check(ctx, gitjob.CheckRequest{Job: host.Job{Run: 2, Component: "db", Ref: "b1/db"}, Commit: a.commit, Base: a.commit})
	require.NoError(t, err)
	assert.Equal(t, []string{"worker w3"}, c.RanOn, "done elsewhere")
	assert.False(t, c.Passed)
}
