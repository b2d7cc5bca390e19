package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat/server"
	"github.com/agentforeman/foreman/internal/cluster"
	"github.com/agentforeman/foreman/internal/tooling/natstest"
)

// foreman run with cluster.nats leads its build through NATS: the board and
// foreman status say which process leads it, foreman cluster status lists
// it with its epoch, and SIGINT releases the lease.
func TestRunInACluster(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	room, err := server.Start(ctx, server.Config{Listen: "127.0.0.1:0", Channels: []string{"#build"}})
	require.NoError(t, err)
	defer room.Close()
	ns := natstest.Start(t)

	dir := t.TempDir()
	cfg := filepath.Join(dir, "foreman.yaml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, `server:
  url: %s
  identity: %s
  rate_limit: 20ms
build:
  name: shop
  components:
    - name: db
    - name: api
      depends_on: [db]
cluster:
  nats: %s
  lease: 1s
  id: alpha
`, room.URL(), filepath.Join(dir, "id.json"), ns.URL()), 0o600))

	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"run", cfg, "--http", "127.0.0.1:0", "--log-format", "json"}, &stdout, &stderr)
	}()
	serving := regexp.MustCompile(`"url":"(http://127\.0\.0\.1:\d+/)"`)
	var url string
	require.Eventually(t, func() bool {
		m := serving.FindStringSubmatch(stderr.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	}, 20*time.Second, 10*time.Millisecond, "no board URL in the log: %s", stderr.String())
	require.Eventually(t, func() bool {
		resp, err := http.Get(url + "healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 20*time.Second, 20*time.Millisecond, "never healthy: %s", stderr.String())

	code, out, errOut := foreman(t, "status", "--board", url)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "build shop: running, 0 of 2 merged")
	assert.Contains(t, out, "led by: alpha, epoch 1 (this process)")

	code, out, errOut = foreman(t, "cluster", "status", cfg)
	require.Equal(t, 0, code, errOut)
	t.Log("foreman cluster status:\n" + out)
	assert.Regexp(t, `(?m)^BUILD +LEADER +EPOCH +RENEWED +LOG +LAG +NOTE$`, out)
	assert.Regexp(t, `(?m)^shop +alpha +1 +\S+ ago +\d+ +0`, out)

	resp, err := http.Get(url + "metrics")
	require.NoError(t, err)
	body := make([]byte, 1<<20)
	n, _ := resp.Body.Read(body)
	resp.Body.Close()
	for _, m := range []string{"foreman_cluster_lease_renewals_total", "foreman_cluster_takeovers_total 1", "foreman_cluster_append_seconds_bucket"} {
		assert.Contains(t, string(body[:n]), m)
	}

	require.NoError(t, syscall.Kill(syscall.Getpid(), syscall.SIGINT))
	select {
	case code := <-done:
		assert.Equal(t, 0, code, stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("run did not stop on SIGINT")
	}
	code, out, _ = foreman(t, "cluster", "status", cfg)
	require.Equal(t, 0, code)
	assert.Regexp(t, `(?m)^shop +none +1 .*released`, out, "SIGINT released the lease")
}

func TestClusterCommandsNeedNATS(t *testing.T) {
	code, _, errOut := foreman(t, "cluster", "status", writeFile(t, t.TempDir(), "foreman.yaml", "build:\n  components:\n    - name: db\n"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "cluster.nats: not set")
}

// writePool writes a pool as docs/OPERATIONS.md's "A pool" and make scale do: a
// process config holding only cluster settings, and a build config per
// build (its own channel and identity) in cluster.builds.
func writePool(t *testing.T, roomURL, natsURL string, builds ...string) (dir, config string) {
	t.Helper()
	dir = t.TempDir()
	for _, b := range builds {
		writeFile(t, dir, "builds/"+b+".yaml", fmt.Sprintf(`server:
  url: %s
  channel: "#%s"
  identity: ../ids/%s.json
  rate_limit: 20ms
build:
  name: %s
  components:
    - name: db
    - name: api
      depends_on: [db]
`, roomURL, b, b, b))
	}
	config = writeFile(t, dir, "pool.yaml", fmt.Sprintf(`cluster:
  nats: %s
  lease: 1s
  id: p1
  builds: builds
http:
  listen: ""
`, natsURL))
	return dir, config
}

// A pool's process config with no build section (the README's too) is
// valid: validate checks each build in cluster.builds (one line each) and
// says which has a cycle.
func TestValidateAPool(t *testing.T) {
	dir, config := writePool(t, "ws://127.0.0.1:1", "nats://127.0.0.1:1", "alpha", "beta")
	code, out, errOut := foreman(t, "validate", config)
	require.Equal(t, 0, code, errOut)
	builds := filepath.Join(dir, "builds")
	assert.Contains(t, out, "cluster.builds "+builds+": 2 builds\n")
	assert.Contains(t, out, "warning: "+filepath.Join(builds, "alpha.yaml")+", "+filepath.Join(builds, "beta.yaml")+": no operator configured", "one line for both builds")
	assert.Contains(t, out, filepath.Join(builds, "alpha.yaml")+": build alpha: 2 components, no cycles\n")
	assert.Contains(t, out, filepath.Join(builds, "beta.yaml")+": build beta: 2 components, no cycles\n")

	code, out, _ = foreman(t, "validate", "-v", config)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "build beta: 2 components, no cycles; build order:\n  1. db\n  2. api  after db\n")

	// docs/OPERATIONS.md's pool.yaml, beside the same builds.
	ops := string(must(os.ReadFile("../../docs/OPERATIONS.md")))
	_, block, ok := strings.Cut(ops, "```yaml\n# pool.yaml")
	require.True(t, ok, "docs/OPERATIONS.md's \"A pool\" shows a pool.yaml")
	block, _, _ = strings.Cut("# pool.yaml"+block, "```")
	code, out, errOut = foreman(t, "validate", writeFile(t, dir, "readme.yaml", block))
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "cluster.builds "+builds+": 2 builds\n")

	writeFile(t, dir, "builds/loop.yaml", cycleConfig)
	code, out, _ = foreman(t, "validate", config)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, filepath.Join(builds, "loop.yaml")+": build loop: dependency cycle: a -> b -> a\n")
	assert.Contains(t, out, "build alpha: 2 components, no cycles", "the other builds are still checked")
}

// A process config with a build section and cluster.builds is refused by
// validate and run with the same one line, before run binds a port; so is a
// pool build that has nothing to build, and (by run) one with a cycle.
func TestPoolWithABuildOfItsOwnIsRefused(t *testing.T) {
	dir, config := writePool(t, "ws://127.0.0.1:1", "nats://127.0.0.1:1", "alpha")
	require.NoError(t, os.WriteFile(config, append(must(os.ReadFile(config)), "build:\n  name: mine\n  components:\n    - name: db\n"...), 0o644))
	want := "foreman: build.name in " + config + ": drop the build section: with cluster.builds this process leads the builds in " +
		filepath.Join(dir, "builds") + ", and none of its own (to have the pool lead this build, move it into " + filepath.Join(dir, "builds") + " as a config of its own)\n"
	for _, args := range [][]string{{"validate", config}, {"run", config, "--http", held(t)}} {
		code, out, errOut := foreman(t, args...)
		assert.Equal(t, 1, code, args)
		assert.Empty(t, out, args)
		assert.Equal(t, want, errOut, args)
	}

	dir, config = writePool(t, "ws://127.0.0.1:1", "nats://127.0.0.1:1", "alpha")
	empty := writeFile(t, dir, "builds/empty.yaml", "build:\n  name: empty\n")
	for _, args := range [][]string{{"validate", config}, {"run", config, "--http", held(t)}} {
		code, _, errOut := foreman(t, args...)
		assert.Equal(t, 1, code, args)
		assert.Equal(t, "foreman: "+empty+": build.components: no components (list them, or point build.spec at an owl spec)\n", errOut, args)
	}

	// A cycle in one of a pool's builds: run refuses it as it refuses its
	// own build's, naming the file.
	dir, config = writePool(t, "ws://127.0.0.1:1", "nats://127.0.0.1:1", "alpha")
	loop := writeFile(t, dir, "builds/loop.yaml", cycleConfig)
	code, _, errOut := foreman(t, "run", config, "--http", held(t))
	assert.Equal(t, 1, code)
	assert.Equal(t, "foreman: "+loop+": build loop: dependency cycle: a -> b -> a (fix the config, or start it halted with --halted and mend it in the room with UNDEPEND)\n", errOut)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// foreman run with a pool's process config (cluster settings only, as make
// scale writes three of) leads every build in cluster.builds, each in its
// own channel, and says so in foreman cluster status.
func TestRunAPool(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	room, err := server.Start(ctx, server.Config{Listen: "127.0.0.1:0", Channels: []string{"#alpha", "#beta"}})
	require.NoError(t, err)
	defer room.Close()
	ns := natstest.Start(t)
	_, config := writePool(t, room.URL(), ns.URL(), "alpha", "beta")

	_, stderr, done, stop := startAgent(t, strings.NewReader(""), "run", config, "--log-format", "json")
	var out string
	require.Eventually(t, func() bool {
		var code int
		code, out, _ = foreman(t, "cluster", "status", config)
		return code == 0 && regexp.MustCompile(`(?m)^alpha +p1 +1 `).MatchString(out) && regexp.MustCompile(`(?m)^beta +p1 +1 `).MatchString(out)
	}, 30*time.Second, 50*time.Millisecond, "not every build led:\n%s\n%s", out, stderr.String())
	joined := func(channel string) bool {
		for _, l := range strings.Split(stderr.String(), "\n") {
			if strings.Contains(l, `"message":"joined the channel"`) && strings.Contains(l, `"channel":"`+channel+`"`) {
				return true
			}
		}
		return false
	}
	require.Eventually(t, func() bool { return joined("#alpha") && joined("#beta") },
		30*time.Second, 20*time.Millisecond, "a bot per build, each in its own channel: %s", stderr.String())
	stop()
	select {
	case code := <-done:
		assert.Equal(t, 0, code, stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("run did not stop")
	}
}

// foreman cluster status lists the builds' hosts: the one leading each
// build (its lease's epoch and renewal, its ledger's records) and those
// standing by. It signs in as a reader of the example configuration, over
// TLS, with its .creds file: a reader's permissions are enough.
func TestClusterStatusShowsTheHosts(t *testing.T) {
	ns := natstest.StartSecured(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hcert, hkey := ns.Client(t, "host")
	hosts := func(id string) *cluster.Cluster {
		cl, err := cluster.Connect(ctx, cluster.Options{URL: ns.URL(), ID: id, Role: cluster.RoleHost, Lease: 10 * time.Second,
			Auth: cluster.Auth{Creds: ns.Creds(t, "host", id), CA: ns.PKI.CA, Cert: hcert, Key: hkey}})
		require.NoError(t, err)
		t.Cleanup(cl.Close)
		return cl
	}
	h1 := hosts("h1")
	w, err := h1.WatchHosts(ctx)
	require.NoError(t, err)
	defer w.Stop()
	<-w.Ready()
	o, free := w.Free("shop")
	require.True(t, free)
	l, err := h1.AcquireHost(ctx, "shop", "fp", o)
	require.NoError(t, err)
	lg, err := h1.OpenLedger(ctx, l)
	require.NoError(t, err)
	require.NoError(t, lg.Append([]byte(`{"op":"start","run":1}`)))
	h1.AnnounceHost(ctx, "shop", cluster.HostLeading)
	hosts("h2").AnnounceHost(ctx, "shop", cluster.HostStandby)

	cert, key := ns.Client(t, "reader")
	creds := ns.Creds(t, "reader", "r1")
	cfg := writeFile(t, t.TempDir(), "foreman.yaml", fmt.Sprintf("build:\n  name: shop\n  components:\n    - name: db\ncluster:\n  nats: %s\n  creds: %s\n  tls:\n    ca: %s\n    cert: %s\n    key: %s\n",
		ns.URL(), creds, ns.PKI.CA, cert, key))
	code, out, errOut := foreman(t, "cluster", "status", cfg)
	require.Equal(t, 0, code, errOut)
	t.Log("foreman cluster status:\n" + out)
	assert.Contains(t, out, "no builds in the cluster yet")
	assert.Regexp(t, `(?m)^HOST OF +LEADER +EPOCH +RENEWED +LEDGER +STANDBY +NOTE$`, out)
	assert.Regexp(t, `(?m)^shop +h1 +1 +\S+ ago +1 +h2$`, out)
	assert.NotContains(t, out+errOut, natstest.Seed(t, creds), "the user's seed")
}
