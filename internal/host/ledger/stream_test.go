package ledger

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/cluster"
	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/tooling/natstest"
)

// openStream takes the build's host lease for a host named id and opens its
// ledger, as a standby host does when it takes over.
func openStream(t *testing.T, url, id string) (*cluster.Cluster, *cluster.Lease, *Stream, host.State) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := cluster.Connect(ctx, cluster.Options{URL: url, ID: id, Role: cluster.RoleHost, Lease: time.Second})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	w, err := c.WatchHosts(context.Background())
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	var o cluster.Observed
	require.Eventually(t, func() bool {
		var free bool
		o, free = w.Free("shop")
		return free
	}, 30*time.Second, 10*time.Millisecond)
	l, err := c.AcquireHost(ctx, "shop", "fp", o)
	require.NoError(t, err)
	lg, err := c.OpenLedger(ctx, l)
	require.NoError(t, err)
	s, st, err := OpenStream(ctx, lg)
	require.NoError(t, err)
	return c, l, s, st
}

// The ledger in JetStream gives a standby what the file gives a restart:
// what passed, the highest run, the jobs cut short; and a long one is
// compacted to what is live.
func TestStreamReplay(t *testing.T) {
	srv := natstest.Start(t)
	_, l, s, st := openStream(t, srv.URL(), "h1")
	assert.Empty(t, st.Passes)
	p1 := host.Pass{Component: "api", Owner: "@b1", Ref: "b1/api", Tip: "t", Commit: "m", Base: "b", Tree: "tr"}
	require.NoError(t, s.Append([]host.Record{
		{Op: host.OpStart, Run: 1, Kind: "check", Component: "api"},
		{Op: host.OpEnd, Run: 1, Component: "api", Result: "passed"},
		{Op: host.OpPass, Component: "api", Pass: &p1},
		{Op: host.OpStart, Run: 2, Kind: "check", Component: "db"},
	}))
	for run := 3; run < 3+compactStreamAt; run++ { // a long life: a message a batch
		require.NoError(t, s.Append([]host.Record{{Op: host.OpStart, Run: run, Component: "db"}, {Op: host.OpEnd, Run: run, Component: "db"}}))
	}
	require.NoError(t, l.Release(context.Background()))

	c2, _, s2, st := openStream(t, srv.URL(), "h2")
	assert.Equal(t, map[string]host.Pass{"api": p1}, st.Passes)
	assert.Equal(t, 2+compactStreamAt, st.LastRun)
	assert.Equal(t, []int{2}, runs(st.InFlight), "cut short")
	require.NoError(t, s2.Append([]host.Record{{Op: host.OpLanded, Component: "api", Commit: "m"}}))

	// Compacted at that takeover: the next reads a few messages, and the
	// same state.
	c2.Close() // h2 dies: its lease lapses
	c3, _, _, st := openStream(t, srv.URL(), "h3")
	hs, err := c3.Hosts(context.Background())
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.Equal(t, uint64(2), hs[0].Records, "what was live at h2's takeover, and h2's one append")
	assert.Empty(t, st.Passes, "landed")
	assert.Equal(t, 2+compactStreamAt, st.LastRun)
	assert.Equal(t, []int{2}, runs(st.InFlight))
}

// A batch larger than a NATS message goes as several.
func TestStreamSplitsALargeBatch(t *testing.T) {
	srv := natstest.Start(t)
	_, _, s, _ := openStream(t, srv.URL(), "h1")
	big := make([]host.Record, 0, 20000)
	for run := 1; run <= 20000; run++ {
		big = append(big, host.Record{Op: host.OpStart, Run: run, Kind: "check", Component: "component-with-a-long-name"})
	}
	msgs, err := s.encode(big)
	require.NoError(t, err)
	assert.Greater(t, len(msgs), 1, "more than one message")
	require.NoError(t, s.Append(big))
}

// A message of the ledger that is not records (written there by hand) is
// refused with one line saying what to do, as a damaged file is.
func TestStreamDamagedIsRefused(t *testing.T) {
	srv := natstest.Start(t)
	c, l, _, _ := openStream(t, srv.URL(), "h1")
	_, err := c.JetStream().Publish(context.Background(), cluster.LedgerSubject("shop"), []byte("not a record\n"))
	require.NoError(t, err)
	require.NoError(t, l.Release(context.Background()))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c2, err := cluster.Connect(ctx, cluster.Options{URL: srv.URL(), ID: "h2", Role: cluster.RoleHost, Lease: time.Second})
	require.NoError(t, err)
	defer c2.Close()
	w, err := c2.WatchHosts(ctx)
	require.NoError(t, err)
	defer w.Stop()
	var o cluster.Observed
	require.Eventually(t, func() bool { var free bool; o, free = w.Free("shop"); return free }, 30*time.Second, 10*time.Millisecond)
	l2, err := c2.AcquireHost(ctx, "shop", "fp", o)
	require.NoError(t, err)
	lg, err := c2.OpenLedger(ctx, l2)
	require.NoError(t, err)
	_, _, err = OpenStream(ctx, lg)
	var refused *cluster.RefusedError
	require.ErrorAs(t, err, &refused)
	assert.Contains(t, err.Error(), "the host's ledger of build shop (stream FOREMAN_LEDGER_shop) holds a damaged record in its message 1; delete the stream to start afresh")
}
