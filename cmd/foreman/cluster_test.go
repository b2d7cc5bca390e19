package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat/server"
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
