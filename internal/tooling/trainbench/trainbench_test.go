package trainbench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/tooling/natstest"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// bin is the foreman binary: built once for the package, or FOREMAN_BIN
// (to measure another build, e.g. main's before a change, side by side).
var bin string

func TestMain(m *testing.M) {
	if b := os.Getenv("FOREMAN_BIN"); b != "" {
		bin = b
		os.Exit(m.Run())
	}
	roomtest.RunWithForeman(m, &bin)
}

// patience bounds every wait; nothing here asserts speed.
const patience = 10 * time.Minute

// size is one run: TRAIN_COMPONENTS components, checks of TRAIN_CHECK
// each, TRAIN_PARALLEL at once; CI runs the small default. With
// TRAIN_WORKERS, the host runs no check: that many foreman worker
// processes do, through an in-process NATS; TRAIN_KILL=1 kills one of
// them (SIGKILL) in the middle of a check, and starts it again.
type size struct {
	components int
	check      time.Duration
	parallel   int
	workers    int
	kill       bool
	// flake is TRAIN_FLAKE: the share of check runs that fail at random
	// (a flake: the same tree passes another time), drawn from
	// TRAIN_SEED, the commit, the run and the try, so that a seed gives
	// the same draws to the same runs.
	flake float64
	seed  int
	// batch and depth are TRAIN_BATCH and TRAIN_DEPTH: host.batch.max and
	// host.failure_depth (default 1 and 0: each car checked, no wait).
	batch, depth int
}

func sizeFromEnv(t *testing.T) size {
	s := size{components: 4, check: 300 * time.Millisecond, parallel: 2}
	if v := os.Getenv("TRAIN_COMPONENTS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "TRAIN_COMPONENTS")
		s.components = n
	}
	if v := os.Getenv("TRAIN_CHECK"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, "TRAIN_CHECK")
		s.check = d
	}
	if v := os.Getenv("TRAIN_PARALLEL"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "TRAIN_PARALLEL")
		s.parallel = n
	}
	if v := os.Getenv("TRAIN_WORKERS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "TRAIN_WORKERS")
		s.workers = n
	}
	s.kill = os.Getenv("TRAIN_KILL") == "1"
	s.seed = 1
	if v := os.Getenv("TRAIN_FLAKE"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		require.NoError(t, err, "TRAIN_FLAKE")
		require.True(t, f >= 0 && f < 1, "TRAIN_FLAKE is a share, below 1")
		s.flake = f
	}
	if v := os.Getenv("TRAIN_SEED"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "TRAIN_SEED")
		s.seed = n
	}
	s.batch = 1
	for name, to := range map[string]*int{"TRAIN_BATCH": &s.batch, "TRAIN_DEPTH": &s.depth} {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			require.NoError(t, err, name)
			*to = n
		}
	}
	require.False(t, s.kill && s.workers == 0, "TRAIN_KILL kills a worker: set TRAIN_WORKERS")
	require.GreaterOrEqual(t, s.components, 3, "the case needs a semantic conflict between two components")
	return s
}

// TestWholeBuildThroughTheQueue is the merge queue's benchmark, run as a
// user would: foreman serve, foreman run, foreman host on a real
// repository and one scripted builder per component (foreman agent --role
// builder --repo), each adding its own file, and an auditor passing every
// REVIEW at once. Every check takes TRAIN_CHECK; two components pass alone
// and fail together (a semantic conflict git cannot see: the check refuses
// both files without a fix), so one of them steps back and is fixed. It
// prints READY to COMPLETE, the check runs, and the bound
// 2*ceil(N/P)*S + 2*S; it asserts only what must hold: COMPLETE, the
// target holds every component, and every tree the target held passed.
func TestWholeBuildThroughTheQueue(t *testing.T) {
	sz := sizeFromEnv(t)
	dir := t.TempDir()
	ctx := context.Background()
	repo, err := gitrepo.Init(ctx, filepath.Join(dir, "shop.git"), "main", true)
	require.NoError(t, err)
	before, err := repo.RevParse(ctx, "refs/heads/main")
	require.NoError(t, err)

	var comps []string
	for i := 1; i <= sz.components; i++ {
		comps = append(comps, fmt.Sprintf("c%02d", i))
	}
	// The pair that fails together: the second and the last but one, so
	// that both are in the same round of checks.
	x, y := comps[1], comps[len(comps)-2]
	// A flake: each try of a run counts itself in tries/<run> (a path the
	// sandbox lets the checks write: each builder's own copy, kept between
	// its checks), and fails when the hash of the seed, the commit, the
	// run and the try falls under the share.
	tries := filepath.Join(dir, "tries")
	require.NoError(t, os.MkdirAll(tries, 0o755))
	flake := ""
	if sz.flake > 0 {
		flake = fmt.Sprintf(`r=$(basename "$TMPDIR" .tmp); n=$(cat %s/$r 2>/dev/null | wc -l); echo x >> %s/$r; `+
			`h=$(printf "%%s %%s %%s %%s" %d "$FOREMAN_COMMIT" $r $n | cksum | cut -d" " -f1); `+
			`if [ $((h %% 10000)) -lt %d ]; then echo "FAIL: a flake"; exit 1; fi; `, tries, tries, sz.seed, int(sz.flake*10000))
	}
	check := fmt.Sprintf(`sh -c 'sleep %.3f; `, sz.check.Seconds()) + flake +
		fmt.Sprintf(`if [ -e %s/%s.txt ] && [ -e %s/%s.txt ] && [ ! -e %s/fixes.txt ] && [ ! -e %s/fixes.txt ]; then echo "FAIL: %s and %s do not work together"; exit 1; fi'`,
			x, x, y, y, x, y, x, y)

	hostID := identity(t, dir, "--identity", filepath.Join(dir, "host.json"), "--name", "host")
	audID := identity(t, dir, "--identity", filepath.Join(dir, "aud.json"), "--name", "aud")
	config := filepath.Join(dir, "foreman.yaml")
	write := func(url string) {
		var c strings.Builder
		fmt.Fprintf(&c, "server:\n  url: %s\n  rate_limit: %s\n", url, roomtest.Pace)
		c.WriteString("build:\n  name: shop\n  components:\n")
		for _, name := range comps {
			fmt.Fprintf(&c, "    - name: %s\n", name)
		}
		c.WriteString("rules:\n  max_build_time: 0\n  ci_gating: on\n  merge: external\n  checkin_interval: 1h\n  audit_timeout: 1h\n  ci_timeout: 1h\n  ci_attempts: 9\n")
		fmt.Fprintf(&c, "roles:\n  ci: [\"%s\"]\n  merger: [\"%s\"]\n  auditors: [\"%s\"]\n", hostID, hostID, audID)
		fmt.Fprintf(&c, "host:\n  repo: %s\n  identity: host.json\n  max_parallel: %d\n  batch:\n    max: %d\n  failure_depth: %d\n  checks:\n    - %q\n  sandbox_paths:\n    rw: [%q]\n",
			filepath.Join(dir, "shop.git"), sz.parallel, sz.batch, sz.depth, check, tries)
		c.WriteString("journal:\n  path: journal\nhttp:\n  listen: \"\"\n")
		require.NoError(t, os.WriteFile(config, []byte(c.String()), 0o644))
	}
	write("ws://127.0.0.1:1")
	serve := start(t, dir, "serve", "--listen", "127.0.0.1:0", "--buffer-size", "20000", config)
	url := serve.Await(t, `listening on (ws://127\.0\.0\.1:\d+)`)
	write(url)
	// With workers, the host's config (and the workers') joins the
	// cluster's NATS; foreman run's does not: it leads alone, as without.
	hostConfig := config
	var ws *workers
	if sz.workers > 0 {
		ns := natstest.Start(t)
		hostConfig = filepath.Join(dir, "host.yaml")
		data, err := os.ReadFile(config)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(hostConfig, append(data, fmt.Sprintf("cluster:\n  nats: %s\n", ns.URL())...), 0o644))
		ws = &workers{t: t, dir: dir, config: hostConfig, nats: ns.URL(), procs: map[string]*worker{}}
	}
	room := roomtest.At(url, roomtest.Pace)
	watcher := room.Join(t, "watcher")
	foreman := identity(t, dir, config)
	start(t, dir, "run", "--log-level", "warn", config)
	watcher.Await(foreman, "TASKS")
	trace := os.Getenv("TRAIN_TRACE") != ""
	hostLog := "warn"
	if trace {
		hostLog = "info" // its jobs, printed at the end
	}
	host := start(t, dir, "host", "--log-level", hostLog, hostConfig)
	for i := 1; i <= sz.workers; i++ {
		ws.start(fmt.Sprintf("w%d", i))
	}
	start(t, dir, "agent", "--role", "auditor", "--name", "aud", "--identity", filepath.Join(dir, "aud.json"),
		"--delay", "0s", "--minute", "100ms", config)
	for i, c := range comps {
		start(t, dir, "agent", "--role", "builder", "--name", fmt.Sprintf("b%02d", i+1), "--prefer", c,
			"--repo", filepath.Join(dir, "shop.git"), "--minute", "100ms", "--steps", "1", "--fix-steps", "1",
			"--seed", strconv.Itoa(i+1), config)
	}

	var firstReady, complete time.Time
	fixes := 0
	verdicts := map[string]int{} // CI lines, each said once
	var killed kill
	var kills <-chan kill
	if sz.kill {
		kills = ws.killMidCheck(sz.check)
	}
	t0 := time.Now()
	deadline := time.After(patience)
	for complete.IsZero() {
		select {
		case s := <-watcher.Lines():
			for _, line := range strings.Split(s.Text, "\n") {
				if trace && !strings.HasPrefix(line, "[foreman") {
					fmt.Printf("%7.2fs %s %s\n", time.Since(t0).Seconds(), s.From[:5], line)
				}
				switch {
				case strings.HasPrefix(line, "READY ") && firstReady.IsZero():
					firstReady = time.Now()
				case s.From == foreman && strings.HasPrefix(line, "FIX "):
					fixes++
				case s.From == foreman && strings.HasPrefix(line, "COMPLETE "):
					complete = time.Now()
				case strings.HasPrefix(line, "CI "):
					verdicts[line]++
				}
			}
		case killed = <-kills:
			kills = nil
		case <-deadline:
			t.Fatalf("no COMPLETE within %s", patience)
		}
	}
	took := complete.Sub(firstReady)
	if trace {
		for _, line := range strings.Split(host.Stderr.String(), "\n") {
			if strings.Contains(line, "job started") || strings.Contains(line, "job ended") {
				fmt.Println(line)
			}
		}
	}

	// The target holds every component, and every tree it held passed.
	main, err := repo.RevParse(ctx, "refs/heads/main")
	require.NoError(t, err)
	files, err := exec.Command("git", "-C", repo.Dir(), "ls-tree", "-r", "--name-only", main).Output()
	require.NoError(t, err)
	for _, c := range comps {
		require.Contains(t, string(files), c+"/"+c+".txt", "main holds %s", c)
	}
	together := 0
	for _, f := range strings.Fields(string(files)) {
		if f == x+"/fixes.txt" || f == y+"/fixes.txt" {
			together++
		}
	}
	require.Equal(t, 1, together, "the pair landed with exactly one of them fixed")

	for v, n := range verdicts {
		require.Equal(t, 1, n, "a verdict said %d times: %s", n, v)
	}
	// foreman verify, the real binary, from the config alone (with
	// workers or without: it reads no ledger): every commit on main since
	// the chain's signed start, which is where the build began, was landed
	// by the host with a receipt that holds, and main is where the host's
	// signed head says.
	verify := exec.Command(bin, "verify", hostConfig)
	verify.Dir = dir
	table, err := verify.CombinedOutput()
	require.NoError(t, err, "foreman verify:\n%s", table)
	require.Contains(t, string(table), fmt.Sprintf(" since %s: %d commits, %d landed by foreman, 0 not landed by foreman, 0 receipts refused", before[:12], sz.components, sz.components))
	require.Contains(t, string(table), "not rolled back: anchored by the host's head")
	if kills != nil {
		select {
		case killed = <-kills:
		case <-time.After(patience):
		}
	}
	if sz.kill {
		require.NotEmpty(t, killed.worker, "no worker was killed mid-check")
		t.Logf("killed %s mid-check: job %s taken again after %s, its result stored after %s (a check takes %s)",
			killed.worker, killed.job, killed.again.Round(10*time.Millisecond), killed.stored.Round(10*time.Millisecond), sz.check)
		fmt.Printf("trainbench: kill worker=%s taken_again=%s result_stored=%s check=%s\n",
			killed.worker, killed.again.Round(10*time.Millisecond), killed.stored.Round(10*time.Millisecond), sz.check)
	}

	logs, _ := filepath.Glob(filepath.Join(dir, ".foreman", "host", "logs", "*.log"))
	lanes := sz.parallel
	if sz.workers > 0 {
		lanes = min(sz.parallel, sz.workers)
	}
	rounds := (sz.components + lanes - 1) / lanes
	bound := time.Duration(2*rounds)*sz.check + 2*sz.check
	if sz.workers > 0 {
		results, dups, again := ws.counts()
		t.Logf("%d workers: %d results stored, %d dropped as duplicates, %d jobs run again after a worker held them", sz.workers, results, dups, again)
		fmt.Printf("trainbench: workers=%d kill=%v results=%d duplicates=%d again=%d\n", sz.workers, sz.kill, results, dups, again)
		status := exec.Command(bin, "cluster", "status", hostConfig)
		status.Dir = dir
		out, err := status.CombinedOutput()
		require.NoError(t, err, "%s", out)
		t.Logf("foreman cluster status:\n%s", out)
		require.Contains(t, string(out), "WORKER")
	}
	t.Logf("READY to COMPLETE %s for %d components, checks of %s, max_parallel %d, workers %d: %d check runs, %d FIX; bound 2*ceil(N/P)*S+2*S = %s (ratio %.2f)",
		took.Round(10*time.Millisecond), sz.components, sz.check, sz.parallel, sz.workers, len(logs), fixes, bound, took.Seconds()/bound.Seconds())
	fmt.Printf("trainbench: components=%d check=%s parallel=%d workers=%d flake=%.2f seed=%d batch=%d depth=%d ready_to_complete=%s check_runs=%d runs_per_landing=%.2f fixes=%d bound=%s ratio=%.2f\n",
		sz.components, sz.check, sz.parallel, sz.workers, sz.flake, sz.seed, sz.batch, sz.depth, took.Round(10*time.Millisecond), len(logs),
		float64(len(logs))/float64(sz.components), fixes, bound, took.Seconds()/bound.Seconds())
}

func identity(t *testing.T, dir string, args ...string) string {
	return roomtest.Identity(t, bin, dir, args...)
}

func start(t *testing.T, dir string, args ...string) *roomtest.Proc {
	return roomtest.StartProc(t, bin, dir, os.Environ(), args...)
}
