package maketargets

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// root is the repository's top directory.
const root = "../../.."

var declRE = regexp.MustCompile(`(?m)^func ((Benchmark|Fuzz)\w+)\((b \*testing\.B|f \*testing\.F)\)`)

// declared lists the benchmarks and fuzz targets of every package, by kind
// ("Benchmark", "Fuzz"), as "./dir name".
func declared(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "bin" || strings.HasPrefix(d.Name(), ".") && path != root) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, m := range declRE.FindAllStringSubmatch(string(data), -1) {
			out[m[2]] = append(out[m[2]], "./"+filepath.ToSlash(rel)+" "+m[1])
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// run is one go test command of a target: its packages and its -bench or
// -fuzz pattern.
type run struct {
	pkgs    map[string]bool
	pattern *regexp.Regexp
}

// commands reads what make would run for targets (make -n), and keeps the
// go test commands that take a flag (-bench or -fuzz), and for -fuzz the
// runs of scripts/fuzz PACKAGE TARGET (go test -fuzz '^TARGET$').
func commands(t *testing.T, flag string, targets ...string) []run {
	t.Helper()
	cmd := exec.Command("make", append([]string{"-n", "-s"}, targets...)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var runs []run
	for _, line := range strings.Split(string(out), "\n") {
		words := strings.Fields(line)
		if i := slices.Index(words, "scripts/fuzz"); flag == "-fuzz" && i >= 0 && i+2 < len(words) {
			runs = append(runs, run{pkgs: map[string]bool{words[i+1]: true}, pattern: regexp.MustCompile("^" + words[i+2] + "$")})
			continue
		}
		if len(words) < 2 || words[1] != "test" {
			continue
		}
		r := run{pkgs: map[string]bool{}}
		for i, w := range words {
			w = strings.Trim(w, "'")
			switch {
			case w == flag && i+1 < len(words):
				r.pattern = regexp.MustCompile(strings.Trim(words[i+1], "'"))
			case strings.HasPrefix(w, "./"):
				r.pkgs[w] = true
			}
		}
		if r.pattern != nil {
			runs = append(runs, r)
		}
	}
	require.NotEmpty(t, runs, "no go test %s in make %v:\n%s", flag, targets, out)
	return runs
}

func covered(runs []run, decl string) bool {
	pkg, name, _ := strings.Cut(decl, " ")
	for _, r := range runs {
		if r.pkgs[pkg] && r.pattern.MatchString(name) {
			return true
		}
	}
	return false
}

// Every benchmark runs in make bench or make bench-host, and every fuzz
// target in make fuzz: the targets CI runs small and the docs cite.
func TestMakeTargetsRunEveryBenchmarkAndFuzzTarget(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is needed: the Makefile is what this checks")
	}
	decls := declared(t)
	require.NotEmpty(t, decls["Benchmark"])
	require.NotEmpty(t, decls["Fuzz"])
	bench := commands(t, "-bench", "bench", "bench-host")
	for _, d := range decls["Benchmark"] {
		assert.True(t, covered(bench, d), "%s: no go test -bench in make bench or make bench-host runs it", d)
	}
	fuzz := commands(t, "-fuzz", "fuzz")
	for _, d := range decls["Fuzz"] {
		assert.True(t, covered(fuzz, d), "%s: make fuzz does not fuzz it", d)
	}
}

// ciTargets are the targets CI runs: those .ci/run names, and those
// make ci-small runs.
func ciTargets(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	script, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	require.NoError(t, err)
	for _, m := range regexp.MustCompile(`(?m)^make ([\w-]+)`).FindAllStringSubmatch(string(script), -1) {
		out[m[1]] = true
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	_, recipe, ok := strings.Cut(string(makefile), "\nci-small:\n")
	require.True(t, ok, "the Makefile has no ci-small target")
	for _, line := range strings.Split(recipe, "\n") {
		if !strings.HasPrefix(line, "\t") {
			break
		}
		if _, after, ok := strings.Cut(line, "$(MAKE) "); ok {
			out[strings.Fields(after)[0]] = true
		}
	}
	require.True(t, out["ci-small"], ".ci/run does not run make ci-small")
	return out
}

// Every target the README's "Make targets" lists runs in CI, at some
// size: a documented command cannot rot unseen (issue 32: make scale had
// been failing for weeks, since nothing ran it).
func TestCIRunsEveryDocumentedTarget(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	documented := regexp.MustCompile("(?m)^\\| `make ([\\w-]+)`").FindAllStringSubmatch(string(readme), -1)
	require.NotEmpty(t, documented, "no make targets in the README")
	ci := ciTargets(t)
	for _, m := range documented {
		assert.True(t, ci[m[1]], "make %s: documented in the README, run by neither .ci/run nor make ci-small", m[1])
	}
}
