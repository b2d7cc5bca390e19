package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// No cluster section: foreman runs alone, as it always has.
func TestClusterOffByDefault(t *testing.T) {
	c, err := Load(writeConfig(t, minimal), nil, nil)
	require.NoError(t, err)
	assert.False(t, c.Cluster.Enabled())
	assert.Equal(t, 3*time.Second, c.Cluster.Lease)
	assert.Equal(t, 100, c.Cluster.Capacity)
	assert.Equal(t, 1, c.Cluster.Replicas)
}

func TestClusterSection(t *testing.T) {
	builds := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(builds, "a.yaml"), []byte(minimal), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(builds, "notes.txt"), nil, 0o644))
	c, err := Load(writeConfig(t, minimal+"cluster:\n  nats: nats://127.0.0.1:4222, nats://127.0.0.1:4223\n  lease: 5s\n  capacity: 7\n  builds: "+builds+"\n  id: p1\n  replicas: 3\n"), nil, nil)
	require.NoError(t, err)
	assert.True(t, c.Cluster.Enabled())
	assert.Equal(t, 5*time.Second, c.Cluster.Lease)
	assert.Equal(t, 7, c.Cluster.Capacity)
	assert.Equal(t, "p1", c.Cluster.ID)
	assert.Equal(t, 3, c.Cluster.Replicas)
	files, err := c.Cluster.BuildFiles()
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(builds, "a.yaml")}, files)
}

func TestClusterErrorsNameTheKey(t *testing.T) {
	cases := map[string]string{
		"cluster:\n  nats: http://x\n":                      `cluster.nats: "http://x" is not a nats:// or tls:// URL`,
		"cluster:\n  nats: nats://x\n  lease: 10ms\n":       "cluster.lease: 10ms is outside 500ms to 5m0s",
		"cluster:\n  nats: nats://x\n  lease: soon\n":       `cluster.lease: "soon" is not a duration`,
		"cluster:\n  nats: nats://x\n  capacity: 0\n":       "cluster.capacity: 0 is below the least allowed, 1",
		"cluster:\n  nats: nats://x\n  replicas: 9\n":       "cluster.replicas: 9 is over the most allowed, 5",
		"cluster:\n  nats: nats://x\n  builds: /nonexist\n": "cluster.builds: /nonexist is not a directory of build configs",
		"cluster:\n  builds: /tmp\n":                        "cluster.builds: needs cluster.nats",
		"cluster:\n  nats: nats://x\n  id: a*b\n":           `cluster.id: "a*b" is not a name`,
		"cluster:\n  leese: 3s\n":                           "cluster.leese: unknown key (did you mean cluster.lease?)",
	}
	for yaml, want := range cases {
		_, err := Load(writeConfig(t, minimal+yaml), nil, nil)
		require.Error(t, err, yaml)
		assert.Contains(t, err.Error(), want, yaml)
	}
}
