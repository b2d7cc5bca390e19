package sandbox

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tree makes files (path: mode) under a new directory; a mode of 0 makes
// a directory of mode 0o755, a target starting with -> a symbolic link.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		full := filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		switch v := files[p]; {
		case v == "dir":
			require.NoError(t, os.MkdirAll(full, 0o755))
		case v == "private dir":
			require.NoError(t, os.MkdirAll(full, 0o700))
		case len(v) > 2 && v[:2] == "->":
			require.NoError(t, os.Symlink(v[2:], full))
		case v == "private":
			require.NoError(t, os.WriteFile(full, nil, 0o640))
		default:
			require.NoError(t, os.WriteFile(full, nil, 0o644))
		}
	}
	return root
}

func rel(root string, paths []string) []string {
	out := []string{}
	for _, p := range paths {
		r, _ := filepath.Rel(root, p)
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

func TestEveryoneGrantsWhatAllMayRead(t *testing.T) {
	root := tree(t, map[string]string{
		"etc/hostname":            "",
		"etc/shadow":              "private",
		"etc/ssl/certs/a.pem":     "",
		"etc/ssl/private/key.pem": "",
		"etc/ssl/openssl.cnf":     "",
		"etc/apt/sources.list":    "",
		"etc/localtime":           "->../usr/zone",
		"etc/alt/editor":          "->../../usr/vim",
		"etc/cfg":                 "->../usr",
		"usr/zone":                "",
		"usr/vim":                 "",
		"etc/foreman/foreman.yml": "",
		"etc/foreman/other":       "",
	})
	require.NoError(t, os.Chmod(filepath.Join(root, "etc/ssl/private"), 0o700))
	d := denied{paths: []Denied{{Key: "the configuration file", Path: filepath.Join(root, "etc/foreman/foreman.yml")}}}
	var g grants
	everyone(filepath.Join(root, "etc"), d, &g)
	assert.ElementsMatch(t, []string{"etc/alt", "etc/apt", "etc/ssl/certs"}, rel(root, g.dirs))
	assert.ElementsMatch(t, []string{"etc/alt/editor", "etc/foreman/other", "etc/hostname", "etc/localtime", "etc/ssl/openssl.cnf"}, rel(root, g.files),
		"not shadow, not ssl/private, not the denied file, not a link to a directory")
}

func TestAroundGrantsAroundTheHostsFiles(t *testing.T) {
	root := tree(t, map[string]string{
		"opt/tool/bin/x":        "",
		"opt/foreman/host.json": "private",
		"opt/foreman/README":    "",
		"opt/other":             "dir",
	})
	d := denied{paths: []Denied{{Key: "host.identity", Path: filepath.Join(root, "opt/foreman/host.json")}}}
	var g grants
	around(filepath.Join(root, "opt"), d, &g)
	assert.ElementsMatch(t, []string{"opt/other", "opt/tool"}, rel(root, g.dirs))
	assert.ElementsMatch(t, []string{"opt/foreman/README"}, rel(root, g.files))

	g = grants{}
	around(filepath.Join(root, "opt/tool"), d, &g)
	assert.Equal(t, []string{"opt/tool"}, rel(root, g.dirs), "holding nothing denied: granted whole")
}

func TestMakeHomeLinksTheCaches(t *testing.T) {
	home := t.TempDir()
	c := Config{Home: home, RW: []string{filepath.Join(home, ".cache", "go-build"), filepath.Join(home, "go", "pkg", "mod"), filepath.Join(home, ".cache"), "/var/cache/npm"},
		RO: []string{filepath.Join(home, "go", "bin")}}
	priv := t.TempDir()
	h, err := c.MakeHome(priv)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(priv, "home"), h)
	for rel, want := range map[string]string{".cache": filepath.Join(home, ".cache"), "go/pkg/mod": filepath.Join(home, "go/pkg/mod"), "go/bin": filepath.Join(home, "go/bin")} {
		got, err := os.Readlink(filepath.Join(h, rel))
		require.NoError(t, err, rel)
		assert.Equal(t, want, got, rel)
	}
	fi, err := os.Lstat(filepath.Join(h, "go"))
	require.NoError(t, err)
	assert.True(t, fi.IsDir(), "a real directory holding the links")
	_, err = os.Lstat(filepath.Join(home, ".cache", "go-build"))
	assert.True(t, os.IsNotExist(err), "a cache inside a linked one is reached through it, not made in the real HOME")
}

// foreman makes some of its denied files after the system's paths were
// found (telemetry's secret, the journal): a directory everyone may read
// that will hold one is not granted whole, nor is one reached through a
// link to where one will be.
func TestADeniedPathNotMadeYetIsNotGrantedByItsParent(t *testing.T) {
	root := tree(t, map[string]string{
		"etc/ssl/certs/a.pem":  "",
		"etc/ssl/openssl.cnf":  "",
		"opt/tool/bin/x":       "",
		"opt/local/share/doc":  "",
		"usr/local":            "->../opt/local",
		"usr/share/misc/magic": "",
	})
	root, err := filepath.EvalSymlinks(root)
	require.NoError(t, err)
	d := newDenied(Config{Deny: []Denied{
		{Key: "telemetry secret", Path: filepath.Join(root, "etc/ssl/certs/otlp.secret")},
		{Key: "the journal", Path: filepath.Join(root, "usr/local/foreman/journal")},
	}})

	// holding is the granted directories that hold p.
	holding := func(g grants, p string) []string {
		var out []string
		for _, dir := range g.dirs {
			if within(filepath.Join(root, p), dir) {
				out = append(out, dir)
			}
		}
		return rel(root, out)
	}
	var g grants
	everyone(filepath.Join(root, "etc"), d, &g)
	assert.Empty(t, holding(g, "etc/ssl/certs/otlp.secret"), "they will hold the secret")
	assert.Contains(t, rel(root, g.files), "etc/ssl/certs/a.pem", "what they hold now is granted around it")

	g = grants{}
	around(filepath.Join(root, "opt"), d, &g)
	assert.Empty(t, holding(g, "opt/local/foreman/journal"), "usr/local leads there")
	assert.Contains(t, rel(root, g.dirs), "opt/local/share")
	assert.Contains(t, rel(root, g.dirs), "opt/tool")
}
