package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/tooling/natstest"
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

// poolDir writes build configs named name.yaml into a new directory.
func poolDir(t *testing.T, builds map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, yaml := range builds {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(yaml), 0o644))
	}
	return dir
}

func build(name string) string {
	return "build:\n  name: " + name + "\n  components:\n    - name: db\n    - name: api\n      depends_on: [db]\n"
}

// A pool's process config, as make scale and the README's "A pool" write
// it, holds only cluster settings: it loads, and its builds are the
// configs in cluster.builds, each read as foreman run reads one alone.
func TestPoolProcessConfigHasOnlyClusterSettings(t *testing.T) {
	builds := poolDir(t, map[string]string{"a": build("alpha"), "b": build("beta")})
	c, err := Load(writeConfig(t, "cluster:\n  nats: nats://127.0.0.1:4222\n  builds: "+builds+"\n  id: p1\n"), nil, nil)
	require.NoError(t, err)
	assert.Empty(t, c.Build.Components, "the process config has no build of its own")
	pool, err := c.PoolBuilds()
	require.NoError(t, err)
	require.Len(t, pool, 2)
	assert.Equal(t, "alpha", pool[0].Build.Name)
	assert.Equal(t, filepath.Join(builds, "a.yaml"), pool[0].File)
	assert.Len(t, pool[0].Build.Components, 2)
	assert.Equal(t, "beta", pool[1].Build.Name)

	// A relative cluster.builds is read from the process config's directory.
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "builds"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "builds", "x.yaml"), []byte(build("x")), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pool.yaml"), []byte("cluster:\n  nats: nats://127.0.0.1:4222\n  builds: builds\n"), 0o644))
	c, err = Load(filepath.Join(dir, "pool.yaml"), nil, nil)
	require.NoError(t, err)
	pool, err = c.PoolBuilds()
	require.NoError(t, err)
	require.Len(t, pool, 1)
	assert.Equal(t, "x", pool[0].Build.Name)

	// Without cluster.builds the config leads its own build.
	c, err = Load(writeConfig(t, minimal+"cluster:\n  nats: nats://127.0.0.1:4222\n"), nil, nil)
	require.NoError(t, err)
	pool, err = c.PoolBuilds()
	require.NoError(t, err)
	assert.Nil(t, pool)
}

// cluster.builds given by the environment makes a pool too; the builds'
// own configs, which the same environment reaches, are not refused for it.
func TestPoolBuildsFromTheEnvironment(t *testing.T) {
	builds := poolDir(t, map[string]string{"a": build("alpha")})
	t.Setenv("FOREMAN_CLUSTER_NATS", "nats://127.0.0.1:4222")
	t.Setenv("FOREMAN_CLUSTER_BUILDS", builds)
	c, err := Load(writeConfig(t, "log:\n  level: warn\n"), nil, nil)
	require.NoError(t, err)
	pool, err := c.PoolBuilds()
	require.NoError(t, err)
	require.Len(t, pool, 1)
	assert.Equal(t, "alpha", pool[0].Build.Name)
}

// A process config with a build section and cluster.builds is refused
// with one line that says which to drop; so is a pool with a build that
// has nothing to build, or two builds of one name.
func TestPoolBuildsRefused(t *testing.T) {
	good := poolDir(t, map[string]string{"a": build("alpha")})
	relay, err := filepath.Abs("testdata/relay")
	require.NoError(t, err)
	for _, tc := range []struct {
		name, yaml, want string
		env              map[string]string
	}{
		{name: "components and builds", yaml: minimal + "cluster:\n  nats: nats://x\n  builds: " + good + "\n",
			want: "build.components in %s: drop the build section: with cluster.builds this process leads the builds in " + good + ", and none of its own"},
		{name: "a spec and builds", yaml: "build:\n  spec: " + relay + "\ncluster:\n  nats: nats://x\n  builds: " + good + "\n",
			want: "build.spec in %s: drop the build section"},
		{name: "a name and builds", yaml: "build:\n  name: mine\ncluster:\n  nats: nats://x\n  builds: " + good + "\n",
			want: "build.name in %s: drop the build section"},
		{name: "a name from the environment", yaml: "cluster:\n  nats: nats://x\n  builds: " + good + "\n",
			env: map[string]string{"FOREMAN_BUILD_NAME": "mine"}, want: "FOREMAN_BUILD_NAME: drop the build section"},
		{name: "a build with nothing to build", yaml: "cluster:\n  nats: nats://x\n  builds: " + poolDir(t, map[string]string{"a": build("alpha"), "b": "build:\n  name: beta\n"}) + "\n",
			want: "b.yaml: build.components: no components"},
		{name: "two builds of one name", yaml: "cluster:\n  nats: nats://x\n  builds: " + poolDir(t, map[string]string{"a": build("alpha"), "b": build("alpha")}) + "\n",
			want: `b.yaml: build.name: "alpha" is also the name of the build in `},
		{name: "a bad build", yaml: "cluster:\n  nats: nats://x\n  builds: " + poolDir(t, map[string]string{"a": build("alpha") + "rules:\n  checkin_interval: soon\n"}) + "\n",
			want: "a.yaml: rules.checkin_interval:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			file := writeConfig(t, tc.yaml)
			c, err := Load(file, nil, nil)
			require.NoError(t, err, "the process config itself loads")
			_, err = c.PoolBuilds()
			require.Error(t, err)
			want := tc.want
			if strings.Contains(want, "%s") {
				want = fmt.Sprintf(want, file)
			}
			assert.Contains(t, err.Error(), want)
			assert.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}

// cluster.creds, cluster.tls and the sign-in variables: each mistake is one
// line naming what to fix, before anything connects; a secret is never in
// an error, nor in what is logged of the cluster.
func TestClusterSignInErrorsNameTheKey(t *testing.T) {
	dir := t.TempDir()
	notCreds := filepath.Join(dir, "not.creds")
	require.NoError(t, os.WriteFile(notCreds, []byte("hello\n"), 0o600))
	notPEM := filepath.Join(dir, "ca.txt")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600))
	pki := natstest.NewPKI(t)
	cert, key := pki.Issue(t, "client", false)
	_, otherKey := pki.Issue(t, "other", false)
	cases := []struct {
		yaml string
		env  map[string]string
		want string
	}{
		{"cluster:\n  nats: nats://x\n  creds: /nonexist.creds\n", nil, "cluster.creds: /nonexist.creds cannot be read: no such file or directory"},
		{"cluster:\n  nats: nats://x\n  creds: " + notCreds + "\n", nil, "cluster.creds: " + notCreds + " holds no user JWT"},
		{"cluster:\n  nats: nats://x\n  tls:\n    cert: " + cert + "\n", nil, "cluster.tls.cert: set without cluster.tls.key"},
		{"cluster:\n  nats: nats://x\n  tls:\n    key: " + key + "\n", nil, "cluster.tls.key: set without cluster.tls.cert"},
		{"cluster:\n  nats: nats://x\n  tls:\n    cert: " + cert + "\n    key: /nonexist.pem\n", nil, "cluster.tls.key: /nonexist.pem cannot be read"},
		{"cluster:\n  nats: nats://x\n  tls:\n    cert: " + cert + "\n    key: " + otherKey + "\n", nil, "cluster.tls.cert: " + cert + " and cluster.tls.key " + otherKey + " are not a certificate and its key"},
		{"cluster:\n  nats: nats://x\n  tls:\n    ca: " + notPEM + "\n", nil, "cluster.tls.ca: " + notPEM + " holds no PEM certificate"},
		{"cluster:\n  creds: /x.creds\n", nil, "cluster.creds: needs cluster.nats"},
		{"cluster:\n  tls:\n    ca: /x.pem\n", nil, "cluster.tls.ca: needs cluster.nats"},
		{"cluster:\n  nats: nats://alice:s3cret@127.0.0.1:4222\n", nil, "cluster.nats: nats://REDACTED@127.0.0.1:4222 holds a user or token: give them in FOREMAN_NATS_USER"},
		{"cluster:\n  nats: nats://x\n", map[string]string{EnvNATSPassword: "s3cret"}, "FOREMAN_NATS_PASSWORD: set without FOREMAN_NATS_USER"},
		{"cluster:\n  nats: nats://x\n", map[string]string{EnvNATSUser: "alice"}, "FOREMAN_NATS_USER: set without FOREMAN_NATS_PASSWORD"},
		{"cluster:\n  nats: nats://x\n", map[string]string{EnvNATSUser: "alice", EnvNATSPassword: "s3cret", EnvNATSToken: "t0ken"}, "FOREMAN_NATS_TOKEN: set with FOREMAN_NATS_USER"},
		{"cluster:\n  nats: nats://x\n  creds: /x.creds\n", map[string]string{EnvNATSToken: "t0ken"}, "cluster.creds: set with FOREMAN_NATS_TOKEN"},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			_, err := Load(writeConfig(t, minimal+c.yaml), nil, nil)
			require.Error(t, err, c.yaml)
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), "\n", "one line")
			assert.NotContains(t, err.Error(), "s3cret")
			assert.NotContains(t, err.Error(), "t0ken")
		})
	}
}

func TestClusterSignIn(t *testing.T) {
	pki := natstest.NewPKI(t)
	cert, key := pki.Issue(t, "client", false)
	t.Setenv(EnvNATSUser, "alice")
	t.Setenv(EnvNATSPassword, "s3cret")
	c, err := Load(writeConfig(t, minimal+"cluster:\n  nats: tls://127.0.0.1:4222\n  tls:\n    ca: "+pki.CA+"\n    cert: "+cert+"\n    key: "+key+"\n"), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, NATSAuth{User: "alice", Password: "s3cret"}, c.Cluster.Auth)
	assert.Equal(t, ClusterTLS{CA: pki.CA, Cert: cert, Key: key}, c.Cluster.TLS)
	assert.Empty(t, c.Warnings, "the sign-in variables are known, not unknown settings")
	for _, shown := range []string{c.Cluster.String(), fmt.Sprintf("%v %+v %#v", c.Cluster, c.Cluster, c.Cluster)} {
		assert.NotContains(t, shown, "s3cret")
	}
	assert.Contains(t, c.Cluster.String(), "user alice")
}
