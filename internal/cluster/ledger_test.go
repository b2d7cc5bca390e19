package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/tooling/natstest"
)

func connectHost(t *testing.T, url, id string) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Connect(ctx, Options{URL: url, ID: id, Role: RoleHost, Lease: testLease})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// leadHost takes the build's host lease as a standby host does and opens
// its ledger.
func leadHost(t *testing.T, c *Cluster, build string) (*Lease, *Ledger) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := c.WatchHosts(ctx)
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	o, free := waitFree(t, w, build)
	require.True(t, free, "the host lease never came free")
	l, err := c.AcquireHost(ctx, build, "cfg", o)
	require.NoError(t, err)
	lg, err := c.OpenLedger(ctx, l)
	require.NoError(t, err)
	return l, lg
}

func records(t *testing.T, lg *Ledger) []string {
	t.Helper()
	var out []string
	require.NoError(t, lg.Records(func(data []byte) error { out = append(out, string(data)); return nil }))
	return out
}

// A host's lease is a build's lease in a bucket of its own: the same
// epochs and fence. A standby host takes it once it lapses, reads what the
// leader appended, and the deposed leader's next append fails.
func TestHostLeaseAndLedger(t *testing.T) {
	srv := natstest.Start(t)
	a := connectHost(t, srv.URL(), "h1")
	la, lga := leadHost(t, a, "shop")
	assert.Equal(t, uint64(1), la.Epoch())
	require.NoError(t, lga.Append([]byte(`{"op":"start","run":1}`)))
	require.NoError(t, lga.Append([]byte(`{"op":"end","run":1}`)))

	// A build's lease of the same name is another lease altogether.
	f := connect(t, srv.URL(), "f1")
	lf, _ := lead(t, f, watch(t, f), "shop")
	assert.Equal(t, uint64(1), lf.Epoch())

	// b takes the host lease over as if it had lapsed.
	b := connectHost(t, srv.URL(), "h2")
	ctx := context.Background()
	e, err := b.hosts.kv.Get(ctx, Key("shop"))
	require.NoError(t, err)
	la.mu.Lock()
	seen := la.rec // its renewal writes it meanwhile
	la.mu.Unlock()
	lb, err := b.AcquireHost(ctx, "shop", "cfg", Observed{Rec: seen, Rev: e.Revision()})
	require.NoError(t, err)
	assert.Equal(t, uint64(2), lb.Epoch())
	lgb, err := b.OpenLedger(ctx, lb)
	require.NoError(t, err)
	assert.Equal(t, []string{`{"op":"start","run":1}`, `{"op":"end","run":1}`}, records(t, lgb), "the new leader reads what the last appended")

	err = lga.Append([]byte(`{"op":"start","run":2}`))
	require.ErrorIs(t, err, ErrDeposed, "the deposed host's append is fenced off")
	assert.False(t, la.Valid(), "deposed: silent at once")
	require.NoError(t, lgb.Append([]byte(`{"op":"start","run":2}`)))
	assert.True(t, lf.Valid(), "foreman's lease of the build is untouched")

	st, err := b.Hosts(ctx)
	require.NoError(t, err)
	require.Len(t, st, 1)
	assert.Equal(t, "h2", st[0].Leader)
	assert.Equal(t, uint64(2), st[0].Epoch)
	assert.Equal(t, uint64(3), st[0].Records)
}

// A standby host sees a dead leader's lease lapse by its own clock, and
// takes it; status lists the standbys that announced themselves.
func TestStandbyHostTakesALapsedLease(t *testing.T) {
	srv := natstest.Start(t)
	a := connectHost(t, srv.URL(), "h1")
	leadHost(t, a, "shop")
	b := connectHost(t, srv.URL(), "h2")
	b.AnnounceHost(context.Background(), "shop", HostStandby)
	st, err := b.Hosts(context.Background())
	require.NoError(t, err)
	require.Len(t, st, 1)
	assert.Equal(t, []string{"h2"}, st[0].Standbys)
	a.Close() // dies: renewals stop, nothing is released
	lb, lgb := leadHost(t, b, "shop")
	assert.Equal(t, uint64(2), lb.Epoch())
	require.NoError(t, lgb.Append([]byte(`{"op":"start","run":1}`)))
}

// A long ledger is compacted: what is live is written again and the rest
// dropped, so the next leader reads a few messages.
func TestLedgerCompacts(t *testing.T) {
	srv := natstest.Start(t)
	a := connectHost(t, srv.URL(), "h1")
	la, lg := leadHost(t, a, "shop")
	for i := range 40 {
		require.NoError(t, lg.Append(fmt.Appendf(nil, `{"op":"start","run":%d}`, i)))
	}
	require.NoError(t, lg.Compact(context.Background(), [][]byte{[]byte(`{"op":"pass"}`)}))
	require.NoError(t, lg.Append([]byte(`{"op":"end","run":40}`)))
	require.NoError(t, la.Release(context.Background()))
	_, lg2 := leadHost(t, connectHost(t, srv.URL(), "h2"), "shop")
	assert.Equal(t, []string{`{"op":"pass"}`, `{"op":"end","run":40}`}, records(t, lg2))
}
