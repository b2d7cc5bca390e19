package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/node"
	"github.com/agentforeman/foreman/internal/tooling/natstest"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// testLease is short, so that lapses take little time; every wait below is
// bounded by generous deadlines, never by how fast the machine is.
const testLease = 600 * time.Millisecond

func connect(t *testing.T, url, id string) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Connect(ctx, Options{URL: url, ID: id, Lease: testLease})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func engine() coordinator.Config {
	return coordinator.Config{Build: "shop", Self: "@foreman", Rules: coordinator.DefaultRules(),
		Components: []coordinator.Component{{Name: "db"}, {Name: "api", Deps: []string{"db"}}}}
}

func heard(id, from, text string, s int) coordinator.Message {
	return coordinator.Message{ID: id, From: from, Content: text, At: t0.Add(time.Duration(s) * time.Second)}
}

// lead takes the build's lease as w shows it and opens its log.
func lead(t *testing.T, c *Cluster, w *Watch, build string) (*Lease, *Log) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o, free := waitFree(t, w, build)
	require.True(t, free)
	l, err := c.Acquire(ctx, build, "cfg", o)
	require.NoError(t, err)
	lg, err := c.OpenLog(ctx, l, false)
	require.NoError(t, err)
	return l, lg
}

func waitFree(t *testing.T, w *Watch, build string) (Observed, bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if o, ok := w.Free(build); ok {
			return o, true
		}
		select {
		case <-deadline:
			return Observed{}, false
		case <-tick.C:
		}
	}
}

func watch(t *testing.T, c *Cluster) *Watch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := c.WatchLeases(ctx)
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	return w
}

// persist does what the shell does with a Ready.
func persist(t *testing.T, st node.Storage, n *node.Node) node.Ready {
	t.Helper()
	rd := n.Ready()
	require.NoError(t, st.Append(rd.Entries))
	if rd.Snapshot != nil {
		require.NoError(t, st.SaveSnapshot(rd.Snapshot))
	}
	return rd
}

// The log in JetStream keeps what the local journal keeps: a node reopened
// from it by another process, after a snapshot cut the stream, has the same
// numbers, confirmations and unconfirmed replies.
func TestLogReopensElsewhere(t *testing.T) {
	srv := natstest.Start(t)
	a := connect(t, srv.URL(), "a")
	la, lg := lead(t, a, watch(t, a), "shop")
	assert.Equal(t, uint64(1), la.Epoch())

	n, err := node.Open(node.Config{Engine: engine(), Storage: lg, SnapshotEvery: 3})
	require.NoError(t, err)
	n.Step(coordinator.Event{Kind: coordinator.KindStart, At: t0, Instance: "abc123"})
	n.Hear(heard("m1", "@a", "CLAIM db", 1))
	persist(t, lg, n)
	n.Hear(heard("m2", "@b", "CLAIM db\nCLAIM api", 2))
	n.ConfirmRanges([]node.Range{{From: 1, To: 2}}, "e1", t0.Add(3*time.Second))
	persist(t, lg, n)
	require.NoError(t, lg.Close()) // waits for the snapshot
	n.Hear(heard("m3", "@a", "PROGRESS db 50", 4))
	persist(t, lg, n)
	require.NoError(t, lg.SaveAlive(t0.Add(5*time.Second)))
	require.NoError(t, la.Release(context.Background()))

	b := connect(t, srv.URL(), "b")
	lb, lg2 := lead(t, b, watch(t, b), "shop")
	assert.Equal(t, uint64(2), lb.Epoch(), "the epoch grows at every takeover")
	snap, _ := lg2.Snapshot()
	require.NotNil(t, snap, "the snapshot is in the object store")
	again, err := node.Open(node.Config{Engine: engine(), Storage: lg2})
	require.NoError(t, err)
	assert.Equal(t, n.Produced(), again.Produced())
	assert.Equal(t, n.Unconfirmed(), again.Unconfirmed())
	id, _ := again.LastMessage()
	assert.Equal(t, "m3", id)
	alive, _ := lg2.Alive()
	assert.Equal(t, t0.Add(5*time.Second), alive)

	_, err = lg2.stream.GetMsg(context.Background(), 2) // the first commit, after a's fence
	assert.ErrorIs(t, err, jetstream.ErrMsgNotFound, "the snapshot cut the stream")
}

// A deposed leader cannot add one entry: the new leader's fence makes its
// next append fail, the log refuses everything after, and its lease is lost.
func TestFenceDeposesTheOldLeader(t *testing.T) {
	srv := natstest.Start(t)
	a := connect(t, srv.URL(), "a")
	la, lga := lead(t, a, watch(t, a), "shop")
	na, err := node.Open(node.Config{Engine: engine(), Storage: lga})
	require.NoError(t, err)
	na.Step(coordinator.Event{Kind: coordinator.KindStart, At: t0, Instance: "abc123"})
	persist(t, lga, na)

	// b takes the lease over as if it had lapsed: by compare-and-set on the
	// revision it saw.
	b := connect(t, srv.URL(), "b")
	ctx := context.Background()
	e, err := b.builds.kv.Get(ctx, Key("shop"))
	require.NoError(t, err)
	lb, err := b.Acquire(ctx, "shop", "cfg", Observed{Rec: la.rec, Rev: e.Revision()})
	require.NoError(t, err)
	lgb, err := b.OpenLog(ctx, lb, false)
	require.NoError(t, err)

	na.Hear(heard("m1", "@a", "CLAIM db", 1))
	rd := na.Ready()
	err = lga.Append(rd.Entries)
	require.ErrorIs(t, err, ErrDeposed)
	assert.False(t, la.Valid(), "deposed: silent at once")
	select {
	case <-la.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("the lease was not lost")
	}
	assert.ErrorIs(t, lga.SaveAlive(t0), ErrDeposed)
	assert.ErrorIs(t, lga.SaveSnapshot(na.Snapshot()), ErrDeposed)

	nb, err := node.Open(node.Config{Engine: engine(), Storage: lgb})
	require.NoError(t, err)
	assert.True(t, nb.Started())
	id, _ := nb.LastMessage()
	assert.Empty(t, id, "the deposed leader's entry is not in the log")
	nb.Hear(heard("m1", "@a", "CLAIM db", 1))
	persist(t, lgb, nb)
	assert.True(t, lb.Valid())
}

// An append whose answer was lost is tried again, and its retry, finding
// its own message in place, counts as done.
func TestAppendRetryAfterALostAnswer(t *testing.T) {
	srv := natstest.Start(t)
	a := connect(t, srv.URL(), "a")
	_, lg := lead(t, a, watch(t, a), "shop")
	n, err := node.Open(node.Config{Engine: engine(), Storage: lg})
	require.NoError(t, err)
	n.Step(coordinator.Event{Kind: coordinator.KindStart, At: t0, Instance: "abc123"})
	rd := n.Ready()
	before := lg.last
	require.NoError(t, lg.Append(rd.Entries))
	lg.last = before // as if the answer never came
	require.NoError(t, lg.Append(rd.Entries))
	assert.Equal(t, before+1, lg.last)
}

// A leader whose process dies (no release) is replaced once its lease has
// not changed for its time to live; a released lease is taken at once.
func TestStandbyTakesALapsedLease(t *testing.T) {
	srv := natstest.Start(t)
	a := connect(t, srv.URL(), "a")
	b := connect(t, srv.URL(), "b")
	wb := watch(t, b)
	la, _ := lead(t, a, watch(t, a), "shop")

	// Held and renewed: never free, over several lives of the lease.
	for range 3 {
		time.Sleep(testLease / 2)
		_, free := wb.Free("shop")
		require.False(t, free, "a renewed lease is not free")
	}
	a.Close() // dies: renewals stop, nothing is released
	began := time.Now()
	_, free := waitFree(t, wb, "shop")
	require.True(t, free)
	assert.GreaterOrEqual(t, time.Since(began), testLease-margin(testLease), "not before the lease could lapse")
	lb, _ := lead(t, b, wb, "shop")
	assert.Equal(t, la.Epoch()+1, lb.Epoch())

	// Released: the next standby need not wait.
	c := connect(t, srv.URL(), "c")
	wc := watch(t, c)
	<-wc.Ready()
	require.NoError(t, lb.Release(context.Background()))
	o, free := waitFree(t, wc, "shop")
	require.True(t, free)
	assert.Empty(t, o.Rec.Holder)
	lc, _ := lead(t, c, wc, "shop")
	assert.Equal(t, lb.Epoch()+1, lc.Epoch())
}

// Two standbys racing for one lease: exactly one wins.
func TestTwoStandbysRace(t *testing.T) {
	srv := natstest.Start(t)
	a := connect(t, srv.URL(), "a")
	b := connect(t, srv.URL(), "b")
	wa, wb := watch(t, a), watch(t, b)
	oa, _ := waitFree(t, wa, "shop")
	ob, _ := waitFree(t, wb, "shop")
	ctx := context.Background()
	errs := make(chan error, 2)
	for _, p := range []struct {
		c *Cluster
		o Observed
	}{{a, oa}, {b, ob}} {
		go func() {
			_, err := p.c.Acquire(ctx, "shop", "cfg", p.o)
			errs <- err
		}()
	}
	e1, e2 := <-errs, <-errs
	assert.True(t, (e1 == nil) != (e2 == nil), "one wins: %v, %v", e1, e2)
	assert.True(t, errors.Is(e1, ErrTaken) || errors.Is(e2, ErrTaken))
}

// A leader cut off from NATS goes silent before its lease can lapse, and
// learns that it lost it.
func TestCutOffLeaderGoesSilent(t *testing.T) {
	srv := natstest.Start(t)
	proxy := natstest.NewProxy(t, srv.URL())
	a := connect(t, proxy.URL(), "a")
	b := connect(t, srv.URL(), "b")
	wb := watch(t, b)
	la, _ := lead(t, a, watch(t, a), "shop")
	<-wb.Ready()
	proxy.Cut()
	cut := time.Now()
	select {
	case <-la.Lost():
	case <-time.After(30 * time.Second):
		t.Fatal("the cut-off leader never gave up its lease")
	}
	silent := time.Since(cut)
	assert.ErrorIs(t, la.Err(), ErrLeaseLost)
	assert.False(t, la.Valid())
	_, free := waitFree(t, wb, "shop")
	require.True(t, free)
	t.Logf("silent %v after the cut; the standby may take over %v after its last renewal", silent, testLease)
}

// The stream or the lease bucket deleted by hand: a clear refusal, as with
// a lost journal, never a new empty build in its place.
func TestDeletedByHandIsRefused(t *testing.T) {
	srv := natstest.Start(t)
	a := connect(t, srv.URL(), "a")
	la, lga := lead(t, a, watch(t, a), "shop")
	n, err := node.Open(node.Config{Engine: engine(), Storage: lga})
	require.NoError(t, err)
	n.Step(coordinator.Event{Kind: coordinator.KindStart, At: t0, Instance: "abc123"})
	persist(t, lga, n)
	require.NoError(t, la.Release(context.Background()))

	ctx := context.Background()
	require.NoError(t, a.js.DeleteStream(ctx, StreamName("shop")))
	b := connect(t, srv.URL(), "b")
	lb, err := b.Acquire(ctx, "shop", "cfg", mustFree(t, watch(t, b), "shop"))
	require.NoError(t, err)
	_, err = b.OpenLog(ctx, lb, false)
	var refused *RefusedError
	require.ErrorAs(t, err, &refused)
	assert.Contains(t, err.Error(), "deleted by hand")
	assert.Contains(t, err.Error(), "--new-build")
	_, err = b.OpenLog(ctx, lb, true)
	require.NoError(t, err, "--new-build starts the log over")

	require.NoError(t, a.js.DeleteKeyValue(ctx, LeaseBucket))
	select {
	case <-lb.Lost():
	case <-time.After(30 * time.Second):
		t.Fatal("the leader did not stop when its lease bucket went")
	}
	require.ErrorAs(t, lb.Err(), &refused)
	_, err = Connect(ctx, Options{URL: srv.URL(), ID: "c", Lease: testLease})
	require.ErrorAs(t, err, &refused)
	assert.Contains(t, err.Error(), "foreman cluster init")
	c, err := Connect(ctx, Options{URL: srv.URL(), ID: "c", Lease: testLease, Init: true})
	require.NoError(t, err, "cluster init makes it again")
	c.Close()
}

func mustFree(t *testing.T, w *Watch, build string) Observed {
	t.Helper()
	o, ok := waitFree(t, w, build)
	require.True(t, ok)
	return o
}

// Names NATS cannot hold are spelled so that it can, one way only.
func TestKeys(t *testing.T) {
	assert.Equal(t, "shop", Key("shop"))
	assert.Equal(t, "my_2eshop_2a", Key("my.shop*"))
	assert.NotEqual(t, Key("a_2e"), Key("a."))
	assert.Equal(t, "FOREMAN_LOG_shop", StreamName("shop"))
}

// A long log (more commits since the snapshot than are read one by one) is
// read in batches, to the same node.
func TestLongLogReadInBatches(t *testing.T) {
	srv := natstest.Start(t)
	a := connect(t, srv.URL(), "a")
	la, lg := lead(t, a, watch(t, a), "shop")
	n, err := node.Open(node.Config{Engine: engine(), Storage: lg, SnapshotEvery: -1})
	require.NoError(t, err)
	n.Step(coordinator.Event{Kind: coordinator.KindStart, At: t0, Instance: "abc123"})
	persist(t, lg, n)
	for i := range 3 * directReads {
		n.Hear(heard(fmt.Sprintf("m%d", i), "@a", fmt.Sprintf("PROGRESS db %d", i%100), 1+i))
		if i == 0 {
			n.Hear(heard("claim", "@a", "CLAIM db", 1))
		}
		persist(t, lg, n)
	}
	require.NoError(t, la.Release(context.Background()))

	b := connect(t, srv.URL(), "b")
	_, lg2 := lead(t, b, watch(t, b), "shop")
	require.Greater(t, lg2.last-lg2.first, uint64(directReads))
	again, err := node.Open(node.Config{Engine: engine(), Storage: lg2})
	require.NoError(t, err)
	id, _ := again.LastMessage()
	assert.Equal(t, fmt.Sprintf("m%d", 3*directReads-1), id)
	assert.Equal(t, n.Produced(), again.Produced())
	assert.Equal(t, n.Engine().View(), again.Engine().View())
}

// A commit larger than one NATS message goes as several, and reads back
// whole; an entry that cannot fit at all is refused with what to do.
func TestLargeCommitIsSplit(t *testing.T) {
	srv := natstest.StartWith(t, func(o *server.Options) { o.MaxPayload = 64 << 10 })
	a := connect(t, srv.URL(), "a")
	la, lg := lead(t, a, watch(t, a), "shop")
	n, err := node.Open(node.Config{Engine: engine(), Storage: lg, SnapshotEvery: -1})
	require.NoError(t, err)
	n.Step(coordinator.Event{Kind: coordinator.KindStart, At: t0, Instance: "abc123"})
	long := strings.Repeat("x", 20<<10)
	for i := range 10 {
		n.Hear(heard(fmt.Sprintf("m%d", i), "@a", "chat "+long, 1+i))
	}
	before := lg.last
	persist(t, lg, n)
	assert.Greater(t, lg.last-before, uint64(1), "one commit, several messages")
	require.NoError(t, la.Release(context.Background()))

	b := connect(t, srv.URL(), "b")
	_, lg2 := lead(t, b, watch(t, b), "shop")
	again, err := node.Open(node.Config{Engine: engine(), Storage: lg2})
	require.NoError(t, err)
	id, _ := again.LastMessage()
	assert.Equal(t, "m9", id)

	again.Hear(heard("huge", "@a", "chat "+strings.Repeat("y", 70<<10), 20))
	err = lg2.Append(again.Ready().Entries)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "max_payload")
}
