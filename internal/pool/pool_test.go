package pool

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat/server"
	"github.com/agentforeman/foreman/internal/cluster"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/tooling/natstest"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

func builds(t *testing.T, room *roomtest.Room, n int) []Build {
	t.Helper()
	dir := t.TempDir()
	var out []Build
	for i := range n {
		file := filepath.Join(dir, fmt.Sprintf("b%d.yaml", i))
		require.NoError(t, os.WriteFile(file, fmt.Appendf(nil, `server:
  url: %s
  channel: "#b%d"
  identity: id%d.json
  rate_limit: %s
build:
  name: b%d
  components:
    - name: db
    - name: api
      depends_on: [db]
`, room.URL(), i, i, room.Rate(), i), 0o600))
		c, err := config.Load(file, nil, nil)
		require.NoError(t, err)
		out = append(out, Build{Config: c})
	}
	return out
}

type member struct {
	p    *Pool
	stop context.CancelFunc
	done chan error
}

func start(t *testing.T, url, id string, bs []Build, capacity int) *member {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := cluster.Connect(ctx, cluster.Options{URL: url, ID: id, Lease: time.Second, Logger: zerolog.Nop()})
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	p, err := New(Options{Cluster: cl, Builds: bs, Capacity: capacity, Logger: zerolog.Nop()})
	require.NoError(t, err)
	run, stop := context.WithCancel(context.Background())
	m := &member{p: p, stop: stop, done: make(chan error, 1)}
	go func() { m.done <- p.Run(run) }()
	t.Cleanup(func() { stop(); <-m.done })
	return m
}

func (m *member) leading() int {
	n := 0
	for _, l := range m.p.Status() {
		if l.This && l.State == Leading {
			n++
		}
	}
	return n
}

// Two processes share four builds; when one stops (SIGTERM), it releases
// its leases and the other leads all four.
func TestPoolSharesAndHandsOver(t *testing.T) {
	room := roomtest.StartWith(t, func(c *server.Config) {
		c.Channels = []string{"#b0", "#b1", "#b2", "#b3"}
		c.RateLimit = roomtest.Pace
	})
	ns := natstest.Start(t)
	bs := builds(t, room, 4)
	a := start(t, ns.URL(), "a", bs, 4)
	b := start(t, ns.URL(), "b", bs, 4)
	require.Eventually(t, func() bool { return a.leading()+b.leading() == 4 }, 60*time.Second, 20*time.Millisecond,
		"a: %+v\nb: %+v", a.p.Status(), b.p.Status())
	assert.Positive(t, a.leading(), "a leads some: %+v", a.p.Status())
	assert.Positive(t, b.leading(), "b leads some: %+v", b.p.Status())

	a.stop()
	require.NoError(t, <-a.done)
	a.done <- nil // for the cleanup
	require.Eventually(t, func() bool { return b.leading() == 4 }, 60*time.Second, 20*time.Millisecond,
		"b: %+v", b.p.Status())
	for _, l := range b.p.Status() {
		assert.Equal(t, "b", l.Leader)
		assert.GreaterOrEqual(t, l.Epoch, uint64(1))
	}
}

// A process never leads more builds than its capacity.
func TestPoolCapacity(t *testing.T) {
	room := roomtest.StartWith(t, func(c *server.Config) {
		c.Channels = []string{"#b0", "#b1", "#b2"}
		c.RateLimit = roomtest.Pace
	})
	ns := natstest.Start(t)
	bs := builds(t, room, 3)
	a := start(t, ns.URL(), "a", bs, 2)
	require.Eventually(t, func() bool { return a.leading() == 2 }, 60*time.Second, 20*time.Millisecond)
	b := start(t, ns.URL(), "b", bs, 2)
	require.Eventually(t, func() bool { return b.leading() >= 1 }, 60*time.Second, 20*time.Millisecond)
	assert.Equal(t, 2, a.leading(), "%+v", a.p.Status())
}

// Two builds of one name in a pool are refused, naming both files.
func TestPoolRefusesTwoBuildsOfOneName(t *testing.T) {
	room := roomtest.Start(t)
	bs := builds(t, room, 2)
	bs[1].Config.Build.Name = bs[0].Config.Build.Name
	_, err := New(Options{Builds: bs})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "build.name")
}

// A standby with another config for a build refuses to stand by while its
// leader runs; once the leader has released the build (a clean stop), the
// new config takes it over, as a restart with a changed config does.
func TestPoolAnotherConfig(t *testing.T) {
	room := roomtest.StartWith(t, func(c *server.Config) {
		c.Channels = []string{"#b0"}
		c.RateLimit = roomtest.Pace
	})
	ns := natstest.Start(t)
	bs := builds(t, room, 1)
	a := start(t, ns.URL(), "a", bs, 1)
	require.Eventually(t, func() bool { return a.leading() == 1 }, 60*time.Second, 20*time.Millisecond)

	other := *bs[0].Config
	other.Build.Components = other.Build.Components[:1]
	b := start(t, ns.URL(), "b", []Build{{Config: &other}}, 1)
	require.Eventually(t, func() bool { return b.p.Status()[0].State == Refused }, 60*time.Second, 20*time.Millisecond)
	assert.Contains(t, b.p.Status()[0].Problem, "is not the one its leader runs")

	a.stop()
	require.NoError(t, <-a.done)
	a.done <- nil
	require.Eventually(t, func() bool { return b.leading() == 1 }, 60*time.Second, 20*time.Millisecond, "%+v", b.p.Status())
}

// A reload (SIGHUP) changes the config standbys must match: the lease
// carries the new fingerprint, and a standby started with the new config
// stands by.
func TestPoolReloadChangesTheFingerprint(t *testing.T) {
	room := roomtest.StartWith(t, func(c *server.Config) {
		c.Channels = []string{"#b0"}
		c.RateLimit = roomtest.Pace
	})
	ns := natstest.Start(t)
	bs := builds(t, room, 1)
	file := bs[0].Config.File
	bs[0].Reload = func() (*config.Config, error) { return config.Load(file, nil, nil) }
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := cluster.Connect(ctx, cluster.Options{URL: ns.URL(), ID: "a", Lease: time.Second, Logger: zerolog.Nop()})
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	reload := make(chan struct{}, 1)
	p, err := New(Options{Cluster: cl, Builds: bs, Logger: zerolog.Nop(), Reload: reload})
	require.NoError(t, err)
	run, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(run) }()
	t.Cleanup(func() { stop(); <-done })
	a := &member{p: p}
	require.Eventually(t, func() bool { return a.leading() == 1 }, 60*time.Second, 20*time.Millisecond)

	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, append(data, "    - name: web\n      depends_on: [api]\n"...), 0o600))
	changed, err := config.Load(file, nil, nil)
	require.NoError(t, err)
	reload <- struct{}{}
	require.Eventually(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.watch.Lease("b0").Rec.Config == Fingerprint(changed)
	}, 60*time.Second, 20*time.Millisecond, "the lease never carried the reloaded config")

	b := start(t, ns.URL(), "b", []Build{{Config: changed}}, 1)
	require.Never(t, func() bool { return b.p.Status()[0].State == Refused }, time.Second, 50*time.Millisecond,
		"a standby with the reloaded config was refused: %+v", b.p.Status())
}
