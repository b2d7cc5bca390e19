//go:build linux

package sandbox

import (
	"archive/zip"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A socket another check made in its worktree cannot even be named: the
// other worktree is not in this check's filesystem. Filtered by Landlock
// alone (before ABI 9, connect() is no right of its), it could.
func TestAnotherChecksSocketCannotBeNamed(t *testing.T) {
	other := box(t)
	ln, err := net.Listen("unix", filepath.Join(other.Worktree, "sock"))
	require.NoError(t, err)
	defer ln.Close()
	look := `test -S "$OTHER" && echo "sees it" || echo "cannot name it"`
	env := "OTHER=" + filepath.Join(other.Worktree, "sock")

	res := run(t, newSandbox(t, Config{}), box(t), look, env)
	require.NoError(t, res.err, res.out)
	assert.Equal(t, "cannot name it\n", res.out)

	res = run(t, newSandbox(t, Config{Without: Without{Allowlist: true}}), box(t), look, env)
	require.NoError(t, res.err, res.out)
	assert.Equal(t, "sees it\n", res.out, "without the check's own root, the test proves nothing")
}

// /dev/shm is the check's own, within its memory limit: filling it stops
// at the limit (or the check is stopped for memory), and the host's
// /dev/shm never sees it.
func TestDevShmIsTheChecksOwn(t *testing.T) {
	s := newSandbox(t, Config{Limits: Limits{Memory: 64 << 20}})
	mark := filepath.Join("/dev/shm", "foreman-test-"+filepath.Base(t.TempDir()))
	res := run(t, s, box(t), `head -c 200000000 /dev/zero > "$FILL"; echo "wrote $(wc -c < "$FILL")"; sleep 2`, "FILL="+mark)
	assert.NoFileExists(t, mark, "the host's /dev/shm is not the check's")
	if res.stopped == "" {
		assert.Contains(t, res.out, "No space left on device")
		assert.Contains(t, res.out, "wrote 67108864\n", "no more than the memory limit")
	} else {
		assert.Contains(t, res.stopped, "used more than 64MiB of memory")
	}
}

// A symbolic link in the worktree to where a bind of the check's comes
// from reaches what the check sees there, never the host's: a link to a
// shared cache writes into the builder's own copy of it.
func TestALinkToABindsSourceReachesTheChecksOwn(t *testing.T) {
	cache := t.TempDir()
	s := newSandbox(t, Config{RW: []string{cache}, Layers: t.TempDir()})
	r := box(t)
	r.Layer = "@b1"
	res := run(t, s, r, `ln -s "$CACHE" link && echo poison > link/poisoned && cat "$CACHE/poisoned"`, "CACHE="+cache)
	require.NoError(t, res.err, res.out)
	assert.Equal(t, "poison\n", res.out, "written to what the check sees")
	assert.NoFileExists(t, filepath.Join(cache, "poisoned"), "not to the shared cache")
}

// The attack of issue 37 item 3, as it was found: with the Go module cache
// in host.sandbox_paths.rw, one builder's check rewrites a module's source
// there, and another builder's failing test, checked unchanged, passes (Go
// trusts the files it extracted). Each builder having its own copy of the
// RW paths, the second builder's check finds its module cache as it left
// it (here: without the module, so its check cannot build offline, and
// fails as it should). Today's sandbox (RW shared, the check root's) let
// the attack work.
func TestOneBuilderCannotDecideAnothersVerdictThroughACache(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go on PATH: %v", err)
	}
	dir := t.TempDir()
	modcache := filepath.Join(dir, "gomodcache")
	gocache := filepath.Join(dir, "gocache")
	proxy := moduleProxy(t, filepath.Join(dir, "proxy"))
	project := filepath.Join(dir, "project")
	require.NoError(t, os.MkdirAll(project, 0o755))
	writeFiles(t, project, map[string]string{
		"go.mod": "module example.com/shop\n\ngo 1.22\n\nrequire example.com/lib v1.0.0\n",
		"shop_test.go": `package shop

import (
	"testing"

	"example.com/lib"
)

// b2's change is wrong: it expects 2 where lib says 1.
func TestValue(t *testing.T) {
	if lib.Value() != 2 {
		t.Fatalf("lib says %d", lib.Value())
	}
}
`,
	})
	// The host user fills the module cache, as it would with go mod download.
	fill := exec.Command(goBin, "mod", "tidy")
	fill.Dir = project
	fill.Env = goEnv(goBin, modcache, gocache, "GOPROXY=file://"+proxy, "GOSUMDB=off", "HOME="+dir)
	out, err := fill.CombinedOutput()
	require.NoError(t, err, string(out))

	poison := `chmod -R u+w "$GOMODCACHE/example.com/lib@v1.0.0" && printf 'package lib\n\nfunc Value() int { return 2 }\n' > "$GOMODCACHE/example.com/lib@v1.0.0/lib.go" && echo poisoned`
	verdict := func(c Config) (poisonOut string, b2 result) {
		s := newSandbox(t, c)
		r1 := box(t)
		r1.Layer = "@b1"
		res := run(t, s, r1, poison, goEnv(goBin, modcache, gocache)...)
		r2 := box(t)
		r2.Layer = "@b2"
		copyTree(t, project, r2.Worktree)
		b2 = run(t, s, r2, `"$GO" test -count=1 ./... 2>&1`, append(goEnv(goBin, modcache, gocache), "GO="+goBin, "GOPROXY=off", "GOFLAGS=-mod=mod")...)
		return res.out, b2
	}
	ro := []string{filepath.Dir(goBin), filepath.Dir(filepath.Dir(goBin))}
	rw := []string{modcache, gocache}

	out1, b2 := verdict(Config{RO: ro, RW: rw, Without: Without{CacheLayers: true, Nobody: true}})
	require.Contains(t, out1, "poisoned", "today's sandbox let b1 rewrite the shared module cache")
	require.NoError(t, b2.err, "and b2's wrong test then passed, or the test proves nothing:\n%s", b2.out)

	require.NoError(t, os.RemoveAll(modcache)) // back as the host filled it
	fill = exec.Command(goBin, "mod", "download")
	fill.Dir = project
	fill.Env = goEnv(goBin, modcache, gocache, "GOPROXY=file://"+proxy, "GOSUMDB=off", "HOME="+dir)
	out, err = fill.CombinedOutput()
	require.NoError(t, err, string(out))
	_, b2 = verdict(Config{RO: ro, RW: rw, Layers: t.TempDir()})
	require.Error(t, b2.err, "b2's wrong test must fail:\n%s", b2.out)
	data, err := os.ReadFile(filepath.Join(modcache, "example.com", "lib@v1.0.0", "lib.go"))
	require.NoError(t, err)
	assert.Contains(t, string(data), "return 1", "the shared module cache is as the host filled it")
}

// moduleProxy writes a file-based GOPROXY holding example.com/lib v1.0.0,
// whose Value is 1.
func moduleProxy(t *testing.T, dir string) string {
	t.Helper()
	at := filepath.Join(dir, "example.com", "lib", "@v")
	require.NoError(t, os.MkdirAll(at, 0o755))
	mod := "module example.com/lib\n\ngo 1.22\n"
	writeFiles(t, at, map[string]string{
		"list":        "v1.0.0\n",
		"v1.0.0.info": `{"Version":"v1.0.0","Time":"2026-01-01T00:00:00Z"}`,
		"v1.0.0.mod":  mod,
	})
	f, err := os.Create(filepath.Join(at, "v1.0.0.zip"))
	require.NoError(t, err)
	zw := zip.NewWriter(f)
	for name, body := range map[string]string{"go.mod": mod, "lib.go": "package lib\n\nfunc Value() int { return 1 }\n"} {
		w, err := zw.Create("example.com/lib@v1.0.0/" + name)
		require.NoError(t, err)
		_, err = w.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	require.NoError(t, f.Close())
	return dir
}

func goEnv(goBin, modcache, gocache string, more ...string) []string {
	return append([]string{"PATH=" + filepath.Dir(goBin) + ":/usr/bin:/bin", "GOMODCACHE=" + modcache, "GOCACHE=" + gocache,
		"GOTOOLCHAIN=local", "GOFLAGS=", "CGO_ENABLED=0"}, more...)
}

func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	require.NoError(t, err)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(to, e.Name()), data, 0o644))
	}
}

// A run with no builder known keeps its copies of the RW paths in its
// private directory, which its commands write: one command leaves a link
// there to a directory of the host's, and the next command, given its
// copy of the RW path, would write through it into the host's directory.
// The host makes that copy without following a link, and the second
// command does not run. (Where a check's writes go to a volume of its
// own, the copy is there, out of the host's directories.)
func TestALinkLeftForTheNextCommandIsNotFollowed(t *testing.T) {
	cache := t.TempDir()
	victim := t.TempDir()
	plant := `rm -rf "$TMPDIR/.layers/0" && ln -s "$VICTIM" "$TMPDIR/.layers/0" && echo planted`
	next := `echo pwned > "$CACHE/x" && echo wrote`
	env := []string{"VICTIM=" + victim, "CACHE=" + cache}

	s := newSandbox(t, Config{RW: []string{cache}, Without: Without{NoFollow: true, Volumes: true}})
	r := box(t)
	res := run(t, s, r, plant, env...)
	require.NoError(t, res.err, res.out)
	res = run(t, s, r, next, env...)
	require.NoError(t, res.err, res.out)
	assert.FileExists(t, filepath.Join(victim, "x"), "without the defence, the second command writes the host's directory")

	victim2 := t.TempDir()
	env = []string{"VICTIM=" + victim2, "CACHE=" + cache}
	s = newSandbox(t, Config{RW: []string{cache}, Without: Without{Volumes: true}})
	r = box(t)
	res = run(t, s, r, plant, env...)
	require.NoError(t, res.err, res.out)
	cmd := exec.Command("/bin/sh", "-c", next)
	cmd.Dir = r.Worktree
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "TMPDIR=" + r.Private}, env...)
	_, err := s.Command(cmd, r)
	require.ErrorContains(t, err, "not a directory")
	assert.NoFileExists(t, filepath.Join(victim2, "x"))
}
