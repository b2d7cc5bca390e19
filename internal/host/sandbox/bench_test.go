//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkSandboxNoop is the sandbox's cost per check command: a no-op
// (/bin/true) run unconfined, then confined (the re-exec of the host's
// binary, its namespaces, mounts, Landlock ruleset and exec). The
// difference is what the sandbox adds to each check (docs/PERFORMANCE.md).
func BenchmarkSandboxNoop(b *testing.B) {
	r := box(b)
	b.Run("unconfined", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command("/bin/true")
			cmd.Dir = r.Worktree
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	noop := func(b *testing.B, s *Sandbox) {
		for b.Loop() {
			cmd := exec.Command("/bin/true")
			cmd.Dir = r.Worktree
			p, err := s.Command(cmd, r)
			if err != nil {
				b.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			err = p.Started()
			if werr := cmd.Wait(); err == nil {
				err = werr
			}
			p.Done()
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("sandboxed", func(b *testing.B) { noop(b, newSandbox(b, Config{})) })
	// The same with no volume for its writes (the disk polled, as where
	// none can be made): what the volume's mounts cost.
	b.Run("polled-disk", func(b *testing.B) { noop(b, newSandbox(b, Config{Without: Without{Volumes: true}})) })
}

// BenchmarkWarmHonestChecks is a warm `go test` and `npm test` of a small
// project, confined with the documented caches (Go's module cache in
// host.sandbox_paths.ro, its build cache and ~/.npm in .rw), as the
// sandbox was ("shared": the check's filesystem filtered by Landlock, the
// RW caches shared and written by every check, the check as the host's
// uid) and as it is ("own": the check's own root, each builder its own
// copy of the RW caches, nobody for a root host). Each is run once before
// it is timed: the builder's own caches are warm, as they are from its
// second check on.
func BenchmarkWarmHonestChecks(b *testing.B) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("no go")
	}
	home := b.TempDir()
	gocache, npmcache, modcache := filepath.Join(home, ".cache", "go-build"), filepath.Join(home, ".npm"), filepath.Join(home, "go", "pkg", "mod")
	for _, d := range []string{gocache, npmcache, modcache} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	project := func(r Run) {
		writeFiles(b, r.Worktree, map[string]string{
			"go.mod":        "module example.com/small\n\ngo 1.22\n",
			"small.go":      "package small\n\nfunc Add(a, b int) int { return a + b }\n",
			"small_test.go": "package small\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 2) != 4 {\n\t\tt.Fatal(\"no\")\n\t}\n}\n",
			"package.json":  `{"name":"small","version":"1.0.0","scripts":{"test":"node test.js"}}`,
			"test.js":       "const assert = require('assert'); assert.strictEqual(2 + 2, 4); console.log('ok');\n",
		})
	}
	ro := []string{filepath.Dir(filepath.Dir(goBin)), modcache}
	for _, tc := range []struct {
		name string
		c    Config
	}{
		{"shared", Config{Home: home, RO: ro, RW: []string{gocache, npmcache}, Without: Without{Allowlist: true, CacheLayers: true, Nobody: true}}},
		{"own", Config{Home: home, RO: ro, RW: []string{gocache, npmcache}, Layers: b.TempDir()}},
	} {
		s := newSandbox(b, tc.c)
		for _, check := range []struct{ name, script string }{
			{"go-test", `"$GO" test -count=1 ./...`},
			{"npm-test", `npm test --silent`},
		} {
			b.Run(check.name+"/"+tc.name, func(b *testing.B) {
				if _, err := exec.LookPath(strings.TrimSuffix(check.name, "-test")); err != nil {
					b.Skipf("%s is not installed here", check.name)
				}
				r := box(b)
				r.Layer = "@b1"
				project(r)
				priv, err := s.MakeHome(r.Private)
				if err != nil {
					b.Fatal(err)
				}
				env := []string{"GO=" + goBin, "HOME=" + priv, "GOCACHE=" + gocache, "GOMODCACHE=" + modcache, "GOPROXY=off", "GOTOOLCHAIN=local",
					"npm_config_cache=" + npmcache, "npm_config_update_notifier=false"}
				warm := run(b, s, r, check.script, env...)
				if warm.err != nil {
					b.Fatalf("%v\n%s", warm.err, warm.out)
				}
				b.ResetTimer()
				for b.Loop() {
					if res := run(b, s, r, check.script, env...); res.err != nil {
						b.Fatalf("%v\n%s", res.err, res.out)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/check")
			})
		}
	}
}
