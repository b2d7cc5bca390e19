package gitjob

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/host/sandbox"
	"github.com/agentforeman/foreman/internal/host/sandbox/sandboxtest"
)

// Honest checks pass confined, with the cache paths docs/HOST.md gives:
// an honest `go test` of a small module, `npm test` of a small package,
// and git asked about the worktree (git describe, git log), as Makefiles
// do. The caches are where docs/HOST.md puts them: the host user's module
// cache, shared read-only; the build cache and ~/.npm each builder's own,
// linked from the check's private HOME.
func TestHonestChecksPassConfined(t *testing.T) {
	sandboxtest.New(t, sandbox.Config{}) // skips where there is no sandbox
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		tool   string
		ro, rw []string
		files  map[string]string
		check  []string
		want   string
	}{
		{name: "go test", tool: "go", ro: []string{"go/pkg/mod"}, rw: []string{".cache/go-build"},
			files: map[string]string{
				"go.mod":       "module example.com/tiny\n\ngo 1.21\n",
				"tiny.go":      "package tiny\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n",
				"tiny_test.go": "package tiny\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 2) != 4 {\n\t\tt.Fatal(\"2+2\")\n\t}\n}\n",
			},
			check: []string{"go", "test", "-count=1", "./..."}, want: "ok  \texample.com/tiny"},
		{name: "npm test", tool: "npm", rw: []string{".npm"},
			files: map[string]string{
				"package.json": `{"name": "tiny", "version": "1.0.0", "private": true, "scripts": {"test": "node test.js"}}` + "\n",
				"index.js":     "module.exports = (a, b) => a + b;\n",
				"test.js":      "const add = require('./index.js');\nconst assert = require('assert');\nassert.strictEqual(add(2, 2), 4);\nconsole.log('npm tests passed');\n",
			},
			check: []string{"npm", "test"}, want: "npm tests passed"},
		{name: "git describe and git log", tool: "git",
			files: map[string]string{"README": "hello\n"},
			check: []string{"sh", "-c", "git describe --always --tags && git log -1 --format=%s && git rev-parse --abbrev-ref HEAD && git status --short"},
			want:  "Merge b1/work (work) into main\nHEAD\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := exec.LookPath(tc.tool); err != nil {
				if tc.tool == "npm" && os.Getenv("FOREMANTEST_REQUIRE_NPM") == "" {
					t.Skipf("npm is not installed here (CI installs it: .ci/run): %v", err)
				}
				t.Fatalf("%s is not installed: %v", tc.tool, err)
			}
			var ro, rw []string
			for _, p := range tc.ro {
				ro = append(ro, filepath.Join(home, p))
			}
			for _, p := range tc.rw {
				rw = append(rw, filepath.Join(home, p))
			}
			f := newFixtureWith(t, true, func(f *fixture, o *Options) {
				o.Checks = [][]string{tc.check}
				o.Env = nil
				// A builder's first go test builds with its own empty build
				// cache: on a loaded machine of two cores, minutes.
				o.Timeout = 5 * time.Minute
				o.Sandbox = f.sandbox(sandbox.Config{RO: ro, RW: rw, Home: home, Layers: t.TempDir()})
				require.NotNil(t, o.Sandbox)
			})
			f.commit("main", "main", map[string]string{"base": "x\n"}, "base")
			f.git("tag", "-a", "-m", "release", "v0.1", "main")
			f.commit("b1/work", "main", tc.files, "the work")
			o := f.check("work", "b1/work")
			log, err := os.ReadFile(o.Log)
			require.NoError(t, err)
			require.Equal(t, host.Passed, o.Result, "%s\n%s", o.Line, log)
			assert.Contains(t, string(log), tc.want)
			if tc.tool == "git" {
				assert.Regexp(t, `\nv0\.1-2-g[0-9a-f]+\nMerge b1/work \(work\) into main\n`, string(log), "git describe found the tag: the work, and the merge that lands it")
			}
		})
	}
}

// The check's git sees the worktree as the host left it: clean, on the
// commit checked, with the tags of host.repo.
func TestGitInTheCheckSeesTheCommit(t *testing.T) {
	f := newFixtureWith(t, true, func(f *fixture, o *Options) {
		o.Checks = [][]string{{"sh", "-c", `test "$(git rev-parse HEAD)" = "$FOREMAN_COMMIT" && echo "on $FOREMAN_COMMIT"`}}
	})
	f.commit("b1/work", "main", map[string]string{"a": "a\n"}, "work")
	o := f.check("work", "b1/work")
	require.Equal(t, host.Passed, o.Result, o.Line)
	log, err := os.ReadFile(o.Log)
	require.NoError(t, err)
	assert.Contains(t, string(log), fmt.Sprintf("on %s\n", o.Commit))
	assert.False(t, strings.Contains(string(log), "fatal"))
}
