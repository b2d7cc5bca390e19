package cluster

import (
	"bytes"
	"context"
	"errors"
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

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/node"
	"github.com/agentforeman/foreman/internal/tooling/natstest"
)

// syncBuffer is a log the connection's error handler writes from its own
// goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// secured signs in to the example configuration's server as role, over TLS
// with a client certificate of its own.
func secured(t *testing.T, s *natstest.Secured, role Role, id string, log *syncBuffer) Options {
	t.Helper()
	cert, key := s.Client(t, id)
	return Options{URL: s.URL(), ID: id, Role: role, Lease: testLease, Logger: zerolog.New(log),
		Auth: Auth{Creds: s.Creds(t, string(role), id), CA: s.PKI.CA, Cert: cert, Key: key}}
}

func connectWith(t *testing.T, o Options) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Connect(ctx, o)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// refused waits until the server has refused subject to the connection
// whose errors go to log.
func refused(t *testing.T, log *syncBuffer, subject string) {
	t.Helper()
	require.Eventually(t, func() bool {
		l := log.String()
		return strings.Contains(l, "ermissions") && strings.Contains(l, subject)
	}, 30*time.Second, 10*time.Millisecond, "the server did not refuse %s; the log:\n%s", subject, log)
}

// The example NATS configuration (docs/nats/foreman.conf), TLS with client
// certificates and a user per role: each role does its work with no
// refusal: foreman leads a build, the host leads its host and makes the
// workers' queue, a worker takes a job and stores its result and log, a
// reader reads the status.
func TestExampleAccounts(t *testing.T) {
	s := natstest.StartSecured(t)
	ctx := context.Background()

	// foreman: a build led, its log appended to and cut by a snapshot.
	var flog syncBuffer
	f := connectWith(t, secured(t, s, RoleForeman, "f1", &flog))
	_, lg := lead(t, f, watch(t, f), "shop")
	n, err := node.Open(node.Config{Engine: engine(), Storage: lg, SnapshotEvery: 2})
	require.NoError(t, err)
	n.Step(coordinator.Event{Kind: coordinator.KindStart, At: t0, Instance: "abc123"})
	persist(t, lg, n)
	n.Hear(heard("m1", "@a", "CLAIM db", 1))
	persist(t, lg, n)
	require.NoError(t, lg.Close())
	peers, err := f.Peers(ctx)
	require.NoError(t, err)
	peers.Announce(ctx, 1, 10)
	peers.Stop()

	// The host: its lease and ledger, and the workers' queue it makes.
	var hlog syncBuffer
	h := connectWith(t, secured(t, s, RoleHost, "h1", &hlog))
	_, led := leadHost(t, h, "shop")
	require.NoError(t, led.Append([]byte(`{"op":"start","run":1}`)))
	require.NoError(t, led.Compact(ctx, [][]byte{[]byte(`{"op":"pass"}`)}))
	h.AnnounceHost(ctx, "shop", HostLeading)
	js := h.js
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: JobStream, Subjects: []string{JobSubjects}, Retention: jetstream.WorkQueuePolicy})
	require.NoError(t, err)
	_, err = js.CreateOrUpdateConsumer(ctx, JobStream, jetstream.ConsumerConfig{Durable: "worker-w1",
		FilterSubject: "foreman-jobs.*.w1", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	hresults, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: ResultBucket})
	require.NoError(t, err)
	_, err = hresults.Create(ctx, "x.shop.2", []byte(`{"outcome":"cancelled"}`)) // the host settles a job
	require.NoError(t, err)
	_, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: WorkerBucket})
	require.NoError(t, err)
	logs, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: CheckLogStream, Subjects: []string{CheckLogSubjects}, AllowDirect: true})
	require.NoError(t, err)
	hworkers, err := js.KeyValue(ctx, WorkerBucket)
	require.NoError(t, err)
	_, err = hworkers.Put(ctx, "h.shop", []byte(`{}`)) // the host says it gives jobs
	require.NoError(t, err)
	_, err = js.Publish(ctx, "foreman-jobs.shop.w1", []byte(`{"job":"1"}`)) // a job given to w1
	require.NoError(t, err)

	// The reader: status of the builds and their hosts.
	var rlog syncBuffer
	r := connectWith(t, secured(t, s, RoleReader, "r1", &rlog))
	st, err := r.Status(ctx)
	require.NoError(t, err)
	require.Len(t, st, 1)
	assert.Equal(t, "f1", st[0].Leader)
	hs, err := r.Hosts(ctx)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.Equal(t, "h1", hs[0].Leader)

	// A worker takes the job, stores its result and log, says it is there.
	var wlog syncBuffer
	wo := secured(t, s, RoleWorker, "w1", &wlog)
	wc := connectWith(t, wo)
	wjs := wc.js
	cons, err := wjs.Consumer(ctx, JobStream, "worker-w1")
	require.NoError(t, err)
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	require.NoError(t, err)
	var job jetstream.Msg
	for m := range batch.Messages() {
		job = m
	}
	require.NotNil(t, job, "the worker took no job: %v\n%s", batch.Error(), &wlog)
	assert.JSONEq(t, `{"job":"1"}`, string(job.Data()))
	// It reads no stream's information (KV handles would): it publishes
	// its keys and asks for a settled key directly.
	_, err = wjs.Publish(ctx, "$KV."+ResultBucket+".t.shop.1.w1", []byte(`{"worker":"w1"}`)) // it says it took the job
	require.NoError(t, err)
	settled, err := wc.nc.Request("$JS.API.DIRECT.GET.KV_"+ResultBucket+".$KV."+ResultBucket+".x.shop.2", nil, 10*time.Second) // how the host settled one
	require.NoError(t, err)
	assert.Contains(t, string(settled.Data), "cancelled")
	ack, err := wjs.Publish(ctx, "foreman-logs.w1", []byte("ok\n"))
	require.NoError(t, err)
	_, err = wjs.Publish(ctx, "$KV."+ResultBucket+".r.shop.1.w1", []byte(`{"result":"passed"}`))
	require.NoError(t, err)
	_, err = wjs.Publish(ctx, "$KV."+WorkerBucket+".w.w1", []byte(`{}`))
	require.NoError(t, err)
	require.NoError(t, job.DoubleAck(ctx))
	m, err := logs.GetMsg(ctx, ack.Sequence)
	require.NoError(t, err)
	assert.Equal(t, "ok\n", string(m.Data), "the host reads the worker's log")
	r1, err := hresults.Get(ctx, "r.shop.1.w1")
	require.NoError(t, err)
	assert.Contains(t, string(r1.Value()), "passed", "and its result")

	for who, l := range map[string]*syncBuffer{"foreman": &flog, "host": &hlog, "reader": &rlog, "worker": &wlog} {
		assert.NotContains(t, l.String(), "ermissions", "%s was refused something its role needs", who)
	}

}

// attack is something a worker's credentials must not do, tried with the
// worker's own connection; ok says whether it worked.
type attack struct {
	name    string
	subject string // what the server refuses, as it says
	try     func(ctx context.Context, w *Cluster) error
	worked  func(t *testing.T, f, h *Cluster) bool
}

func workerAttacks() []attack {
	kvPut := func(bucket string) func(ctx context.Context, w *Cluster) error {
		return func(ctx context.Context, w *Cluster) error {
			m := nats.NewMsg("$KV." + bucket + "." + Key("shop"))
			m.Data = []byte(`{"build":"shop","holder":"w1","epoch":99}`)
			_, err := w.js.PublishMsg(ctx, m)
			return err
		}
	}
	holder := func(set func(c *Cluster) *leaseSet) func(t *testing.T, f, h *Cluster) bool {
		return func(t *testing.T, f, h *Cluster) bool {
			c := f
			if set(f).kv == nil {
				c = h
			}
			e, err := set(c).kv.Get(context.Background(), Key("shop"))
			require.NoError(t, err)
			return strings.Contains(string(e.Value()), `"holder":"w1"`)
		}
	}
	forged := func(stream, subject string, c func(f, h *Cluster) *Cluster) func(t *testing.T, f, h *Cluster) bool {
		return func(t *testing.T, f, h *Cluster) bool {
			s, err := c(f, h).js.Stream(context.Background(), stream)
			require.NoError(t, err)
			m, err := s.GetLastMsgForSubject(context.Background(), subject)
			return err == nil && strings.Contains(string(m.Data), "forged")
		}
	}
	return []attack{
		{"append to the build's log", LogSubject("shop"),
			func(ctx context.Context, w *Cluster) error {
				_, err := w.js.Publish(ctx, LogSubject("shop"), []byte("forged"))
				return err
			}, forged(StreamName("shop"), LogSubject("shop"), func(f, _ *Cluster) *Cluster { return f })},
		{"append to the host's ledger", LedgerSubject("shop"),
			func(ctx context.Context, w *Cluster) error {
				_, err := w.js.Publish(ctx, LedgerSubject("shop"), []byte(`{"op":"landed","c":"forged"}`))
				return err
			}, forged(LedgerStream("shop"), LedgerSubject("shop"), func(_, h *Cluster) *Cluster { return h })},
		{"take the build's lease", "$KV." + LeaseBucket + "." + Key("shop"), kvPut(LeaseBucket),
			holder(func(c *Cluster) *leaseSet { return &c.builds })},
		{"take the host's lease", "$KV." + HostLeaseBucket + "." + Key("shop"), kvPut(HostLeaseBucket),
			holder(func(c *Cluster) *leaseSet { return &c.hosts })},
		{"delete the build's log", "$JS.API.STREAM.DELETE." + StreamName("shop"),
			func(ctx context.Context, w *Cluster) error { return w.js.DeleteStream(ctx, StreamName("shop")) },
			func(t *testing.T, f, _ *Cluster) bool {
				_, err := f.js.Stream(context.Background(), StreamName("shop"))
				return errors.Is(err, jetstream.ErrStreamNotFound)
			}},
		{"listen to what JetStream tells foreman", RoleForeman.Inbox("") + ".>",
			func(ctx context.Context, w *Cluster) error {
				got := make(chan struct{}, 1)
				sub, err := w.nc.Subscribe(RoleForeman.Inbox("")+".>", func(*nats.Msg) {
					select {
					case got <- struct{}{}:
					default:
					}
				})
				if err != nil {
					return err
				}
				defer sub.Unsubscribe()
				select {
				case <-got:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}, nil},
	}
}

// A worker runs builders' code: its credentials must not be able to take a
// build over. Each attack is tried twice: with a worker's user as foreman
// nats creds makes it, where the server refuses it and nothing changes;
// and with a user given no permissions (any user of the account may do
// anything), where it works, or the test proves nothing.
func TestWorkerCannotTakeABuildOver(t *testing.T) {
	for _, guarded := range []bool{false, true} {
		name := "unguarded"
		if guarded {
			name = "example permissions"
		}
		t.Run(name, func(t *testing.T) {
			s := natstest.StartSecured(t)
			var flog, hlog, wlog syncBuffer
			f := connectWith(t, secured(t, s, RoleForeman, "f1", &flog))
			fl, lg := lead(t, f, watch(t, f), "shop")
			require.NoError(t, lg.Append([]node.Entry{{Index: 1, Event: &coordinator.Event{Kind: coordinator.KindStart, At: t0, Instance: "abc123"}}}))
			h := connectWith(t, secured(t, s, RoleHost, "h1", &hlog))
			hl, led := leadHost(t, h, "shop")
			require.NoError(t, led.Append([]byte(`{"op":"start","run":1}`)))
			wo := secured(t, s, RoleWorker, "w1", &wlog)
			if !guarded {
				wo.Auth.Creds = s.CredsWith(t, "w1", jwt.Permissions{})
			}
			w := connectWith(t, wo)
			for _, a := range workerAttacks() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				listening := a.worked == nil
				if listening {
					// Something for foreman to be told meanwhile.
					go func() { _, _ = f.js.AccountInfo(context.Background()) }()
					ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
					go func() {
						for ctx.Err() == nil {
							_, _ = f.js.AccountInfo(context.Background())
							time.Sleep(20 * time.Millisecond)
						}
					}()
				}
				err := a.try(ctx, w)
				cancel()
				if guarded {
					assert.Error(t, err, a.name)
					refused(t, &wlog, a.subject)
					if !listening {
						assert.False(t, a.worked(t, f, h), "%s: refused, yet it happened", a.name)
					}
				} else {
					assert.NoError(t, err, "%s: without the permissions it must work, or the test proves nothing", a.name)
					if !listening {
						assert.True(t, a.worked(t, f, h), "%s did not work even without the permissions", a.name)
					}
				}
			}
			if guarded {
				assert.True(t, fl.Valid(), "foreman still leads the build")
				assert.True(t, hl.Valid(), "the host still leads it")
				assert.NoError(t, lg.Append([]node.Entry{{Index: 2, Event: &coordinator.Event{Kind: coordinator.KindStart, At: t0, Instance: "abc123"}}}), "foreman's log is its own still")
				assert.NoError(t, led.Append([]byte(`{"op":"end","run":1}`)), "the host's ledger is its own still")
			}
		})
	}
}

// Signing in wrongly is refused with a line that says what to check.
func TestSignInRefused(t *testing.T) {
	s := natstest.StartSecured(t)
	var log syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	o := secured(t, s, RoleWorker, "w1", &log)
	o.Auth.Creds = natstest.StartSecured(t).Creds(t, "worker", "w1") // another operator's
	_, err := Connect(ctx, o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the server refused this process's credentials")

	o = secured(t, s, RoleWorker, "w1", &log)
	o.Auth.Cert, o.Auth.Key = "", ""
	_, err = Connect(ctx, o)
	require.Error(t, err, "no client certificate")

	o = secured(t, s, RoleWorker, "w1", &log)
	other := natstest.NewPKI(t)
	o.Auth.CA = other.CA
	_, err = Connect(ctx, o)
	require.Error(t, err, "a server whose certificate another CA signed")
	assert.Contains(t, err.Error(), "TLS: check cluster.tls.ca")
	assert.NotContains(t, err.Error(), "SUA", "no seed in the line")

	_, err = Connect(ctx, Options{URL: s.URL(), ID: "anon", Role: RoleReader})
	require.Error(t, err, "no TLS, no user")
	assert.False(t, errors.Is(err, context.DeadlineExceeded))
}

// cluster.creds: in operator mode (accounts and users are JWTs, as NATS
// providers run it), foreman signs in with a .creds file over TLS and leads
// a build; a worker's .creds, with the worker's permissions, is refused
// the build's log.
func TestCredsAndTLS(t *testing.T) {
	o := natstest.StartSecured(t)
	ctx := context.Background()
	opts := func(role Role, id string, log *syncBuffer) Options {
		cert, key := o.Client(t, id)
		return Options{URL: o.URL(), ID: id, Role: role, Lease: testLease, Logger: zerolog.New(log),
			Auth: Auth{Creds: o.Creds(t, string(role), id), CA: o.PKI.CA, Cert: cert, Key: key}}
	}
	var flog, wlog syncBuffer
	f := connectWith(t, opts(RoleForeman, "f1", &flog))
	fl, lg := lead(t, f, watch(t, f), "shop")
	require.NoError(t, lg.Append([]node.Entry{{Index: 1, Event: &coordinator.Event{Kind: coordinator.KindStart, At: t0, Instance: "abc123"}}}))
	assert.True(t, fl.Valid())

	w := connectWith(t, opts(RoleWorker, "w1", &wlog))
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	_, err := w.js.Publish(pctx, LogSubject("shop"), []byte("forged"))
	cancel()
	assert.Error(t, err)
	refused(t, &wlog, LogSubject("shop"))
	assert.NotContains(t, flog.String(), "ermissions")
	require.NoError(t, lg.Append([]node.Entry{{Index: 2, Event: &coordinator.Event{Kind: coordinator.KindStart, At: t0, Instance: "abc123"}}}), "the log is foreman's still")

	// A .creds file of another operator's is refused.
	other := natstest.StartSecured(t)
	bad := opts(RoleForeman, "f2", &flog)
	bad.Auth.Creds = other.Creds(t, "foreman", "f2")
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = Connect(cctx, bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the server refused this process's credentials")
}

// sharedHost is the host's permissions before each host's user was made
// for its builds: the JetStream API on every stream (*), narrowed by
// denies of foreman's streams of fixed names. The control of
// TestHostCannotTouchForemansLog.
func sharedHost() jwt.Permissions {
	var p jwt.Permissions
	p.Pub.Allow.Add("$JS.API.INFO", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.INFO.*", "$JS.API.STREAM.CREATE.*",
		"$JS.API.STREAM.PURGE.*", "$JS.API.STREAM.MSG.GET.*", "$JS.API.DIRECT.GET.>", "$JS.API.CONSUMER.CREATE.>",
		"$JS.API.CONSUMER.DELETE.>", "$JS.API.CONSUMER.INFO.>", "$JS.API.CONSUMER.MSG.NEXT.>", "$JS.FC.>",
		"foreman-host.*.ledger", "foreman-host.*.fence", "$KV.FOREMAN_HOST_LEASES.>", "$KV.FOREMAN_HOST_NODES.>")
	p.Pub.Deny.Add("$JS.API.STREAM.*.KV_FOREMAN_LEASES", "$JS.API.STREAM.*.KV_FOREMAN_STATE",
		"$JS.API.STREAM.*.KV_FOREMAN_NODES", "$JS.API.STREAM.*.OBJ_FOREMAN_SNAPSHOTS")
	p.Sub.Allow.Add(RoleHost.Inbox("") + ".>")
	return p
}

// A host's credentials, as foreman nats creds makes them for its builds,
// cannot purge a build's log nor make a stream on foreman's subjects
// before foreman opens the build; with the host's permissions of before
// (the API on every stream), both work. The host still leads its build
// (its ledger made, appended to and compacted).
func TestHostCannotTouchForemansLog(t *testing.T) {
	for _, guarded := range []bool{false, true} {
		name := "the API on every stream"
		if guarded {
			name = "a host user for its builds"
		}
		t.Run(name, func(t *testing.T) {
			s := natstest.StartSecured(t)
			ctx := context.Background()
			var flog, hlog syncBuffer
			f := connectWith(t, secured(t, s, RoleForeman, "f1", &flog))
			_, lg := lead(t, f, watch(t, f), "shop")
			require.NoError(t, lg.Append([]node.Entry{{Index: 1, Event: &coordinator.Event{Kind: coordinator.KindStart, At: t0, Instance: "abc123"}}}))
			ho := secured(t, s, RoleHost, "h1", &hlog)
			if !guarded {
				ho.Auth.Creds = s.CredsWith(t, "h1", sharedHost())
			}
			h := connectWith(t, ho)
			_, led := leadHost(t, h, "shop")
			require.NoError(t, led.Append([]byte(`{"op":"start","run":1}`)))
			require.NoError(t, led.Compact(ctx, [][]byte{[]byte(`{"op":"pass"}`)}), "the host compacts its own ledger")

			logMsgs := func() uint64 {
				st, err := f.js.Stream(ctx, StreamName("shop"))
				require.NoError(t, err)
				return st.CachedInfo().State.Msgs
			}
			before := logMsgs()
			require.NotZero(t, before)
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			st, err := h.js.Stream(pctx, StreamName("shop"))
			if err == nil {
				err = st.Purge(pctx)
			}
			cancel()
			purged := err == nil && logMsgs() == 0
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err2 := h.js.CreateStream(cctx, jetstream.StreamConfig{Name: "SQUAT", Subjects: []string{LogSubject("web")}})
			cancel()
			_, serr := f.js.Stream(ctx, "SQUAT")
			squatted := err2 == nil && serr == nil
			if guarded {
				assert.False(t, purged, "the host purged a build's log: %v", err)
				refused(t, &hlog, "$JS.API.STREAM.PURGE."+StreamName("shop"))
				assert.False(t, squatted, "the host made a stream on foreman's subjects: %v", err2)
				refused(t, &hlog, "$JS.API.STREAM.CREATE.SQUAT")
				assert.Equal(t, before, logMsgs(), "foreman's log as it was")
			} else {
				assert.True(t, purged, "without its defence the purge must work, or the test proves nothing: %v", err)
				assert.True(t, squatted, "without its defence the squat must work: %v", err2)
			}
		})
	}
}
