package gitjob

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/host/receipt"
	"github.com/agentforeman/foreman/internal/host/sandbox"
)

// benchDir holds what the benchmarks share (TestMain removes it): a
// repository of 10,000 files is made once, and each runner's first slot
// once (writing 10,000 files takes seconds on a slow disk; later runs
// write only what differs).
var (
	benchDir  string
	benchOnce sync.Once
	benchRepo *gitrepo.Repo
)

func sharedRepo(b *testing.B) *gitrepo.Repo {
	benchOnce.Do(func() {
		var err error
		benchDir, err = os.MkdirTemp("", "gitjob-bench-")
		require.NoError(b, err)
		benchRepo = bigRepo(b, benchDir, 10000, 1000)
	})
	return benchRepo
}

// bigRepo is a bare repository of files files and commits commits on
// main, made with git fast-import: the size the host's overhead is
// measured at.
func bigRepo(b *testing.B, root string, files, commits int) *gitrepo.Repo {
	b.Helper()
	dir := filepath.Join(root, "big.git")
	repo, err := gitrepo.Init(ctx, dir, "main", true)
	require.NoError(b, err)
	base, err := repo.RevParse(ctx, "refs/heads/main")
	require.NoError(b, err)
	var in bytes.Buffer
	when := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for c := 1; c <= commits; c++ {
		msg := fmt.Sprintf("commit %d", c)
		fmt.Fprintf(&in, "commit refs/heads/main\nmark :%d\ncommitter bench <b@example.com> %d +0000\ndata %d\n%s\n", c, when+int64(c), len(msg), msg)
		if c == 1 {
			fmt.Fprintf(&in, "from %s\n", base)
			for f := 0; f < files; f++ {
				body := fmt.Sprintf("file %d\nline two\n", f)
				fmt.Fprintf(&in, "M 100644 inline src/d%02d/f%05d.txt\ndata %d\n%s\n", f%100, f, len(body), body)
			}
			continue
		}
		for k := 0; k < 5; k++ { // each later commit changes five files
			f := (c*37 + k*101) % files
			body := fmt.Sprintf("file %d\nchanged by commit %d\n", f, c)
			fmt.Fprintf(&in, "M 100644 inline src/d%02d/f%05d.txt\ndata %d\n%s\n", f%100, f, len(body), body)
		}
	}
	cmd := exec.Command("git", "fast-import", "--quiet", "--force")
	cmd.Dir = dir
	cmd.Stdin = &in
	out, err := cmd.CombinedOutput()
	require.NoError(b, err, string(out))
	return repo
}

// branchOff makes a branch off main~back with one new file: a builder's
// READY, which must be merged (main moved on since).
func branchOff(b *testing.B, repo *gitrepo.Repo, name string, back int) string {
	b.Helper()
	parent, err := repo.RevParse(ctx, fmt.Sprintf("refs/heads/main~%d", back))
	require.NoError(b, err)
	c, err := repo.CommitFiles(ctx, parent, map[string]string{"new/" + name + ".txt": name + "\n"}, "work "+name, gitrepo.Author{Name: "b", Email: "b@example.com"})
	require.NoError(b, err)
	require.NoError(b, repo.UpdateRef(ctx, "refs/heads/"+name, c, "", "bench"))
	return c
}

// branches numbers the benchmarks' branches: the repository is shared.
var branches atomic.Int64

var (
	runnersMu sync.Mutex
	runners   = map[int]*Runner{}
)

// benchRunner is a runner with no-op checks (true) and slots ready slots
// already made, shared by the benchmarks.
func benchRunner(b *testing.B, repo *gitrepo.Repo, slots int) *Runner {
	runnersMu.Lock()
	defer runnersMu.Unlock()
	if r := runners[slots]; r != nil {
		return r
	}
	dir := filepath.Join(benchDir, fmt.Sprintf("runner-%d", slots))
	r, err := New(Options{Repo: repo, Target: "main", AutoRebase: true, Timeout: time.Minute,
		Checks: [][]string{{"true"}}, Logs: filepath.Join(dir, "logs"), Work: filepath.Join(dir, "work")})
	require.NoError(b, err)
	main, err := repo.RevParse(ctx, "refs/heads/main")
	require.NoError(b, err)
	var made []*slot
	for range slots {
		s := r.takeSlot()
		require.NoError(b, r.ready(ctx, s, main))
		made = append(made, s)
	}
	for _, s := range made {
		r.giveSlot(s)
	}
	runners[slots] = r
	return r
}

// BenchmarkReadyToVerdict is the host's own work per READY with a no-op
// check (true), on a repository of 10,000 files and 1,000 commits: the ref
// checked and resolved, merged with main (merge-tree), the merge commit
// made, a fresh worktree of it checked out, the check run, the worktree
// removed, the branch looked at again.
func BenchmarkReadyToVerdict(b *testing.B) {
	repo := sharedRepo(b)
	r := benchRunner(b, repo, 1)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		name := fmt.Sprintf("b/c%d", branches.Add(1))
		branchOff(b, repo, name, 3)
		b.StartTimer()
		o := r.Run(ctx, host.Job{Run: int(branches.Load()), Kind: host.Check, Component: "c", Ref: name, Owner: "@b"})
		if o.Result != host.Passed {
			b.Fatalf("%+v", o)
		}
	}
}

// BenchmarkReadyToVerdictConfined is BenchmarkReadyToVerdict with the
// check confined as foreman host confines it (its own root, and, for a
// host running as root, its worktree of 10,000 files given to nobody
// while it runs): what the sandbox adds per check on a real repository.
func BenchmarkReadyToVerdictConfined(b *testing.B) {
	repo := sharedRepo(b)
	dir := filepath.Join(benchDir, "runner-confined")
	box, err := sandbox.New(sandbox.Config{GitDir: repo.GitDir(), Home: b.TempDir()})
	if err != nil {
		b.Skipf("no sandbox here: %v", err)
	}
	r, err := New(Options{Repo: repo, Target: "main", AutoRebase: true, Timeout: time.Minute, Sandbox: box,
		Checks: [][]string{{"true"}}, Logs: filepath.Join(dir, "logs"), Work: filepath.Join(dir, "work")})
	require.NoError(b, err)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		name := fmt.Sprintf("b/c%d", branches.Add(1))
		branchOff(b, repo, name, 3)
		b.StartTimer()
		o := r.Run(ctx, host.Job{Run: int(branches.Load()), Kind: host.Check, Component: "c", Ref: name, Owner: "@b"})
		if o.Result != host.Passed {
			b.Fatalf("%+v", o)
		}
	}
}

// BenchmarkQueueThroughput is READYs to verdicts per second through the
// core and the git jobs together, with max_parallel 1 and 4: the core
// decides, jobs run in goroutines as the live shell runs them.
func BenchmarkQueueThroughput(b *testing.B) {
	repo := sharedRepo(b)
	for _, p := range []int{1, 4} {
		b.Run(fmt.Sprintf("max_parallel=%d", p), func(b *testing.B) {
			r := benchRunner(b, repo, p)
			const batch = 8
			var refs []string
			for range b.N * batch {
				name := fmt.Sprintf("p%d/c%d", p, branches.Add(1))
				branchOff(b, repo, name, 3)
				refs = append(refs, name)
			}
			b.ResetTimer()
			start := time.Now()
			for n := range b.N {
				verdicts := throughQueue(b, r, p, refs[n*batch:(n+1)*batch])
				if verdicts != batch {
					b.Fatalf("%d verdicts of %d", verdicts, batch)
				}
			}
			b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "readys/s")
		})
	}
}

// throughQueue feeds READYs for refs to a core with max_parallel p and
// runs what it starts until every verdict is said.
func throughQueue(b *testing.B, r *Runner, p int, refs []string) int {
	now := time.Now()
	core := host.New(host.Config{Self: "@host", Coordinator: "@foreman", Gating: true, MaxParallel: p, Checks: CheckNames(r.o.Checks)}, host.State{})
	results := make(chan host.Outcome, len(refs))
	var wg sync.WaitGroup
	verdicts := 0
	apply := func(a host.Actions) {
		for _, l := range a.Say {
			if strings.HasPrefix(l, "CI ") {
				verdicts++
			}
		}
		for _, j := range a.Start {
			wg.Add(1)
			go func() { defer wg.Done(); results <- r.Run(context.Background(), j) }()
		}
	}
	for i, ref := range refs {
		c := fmt.Sprintf("c%d", i)
		apply(core.Heard(now, "@foreman", true, "ACK "+c+" @b"))
		apply(core.Heard(now, "@b", true, "READY "+c+" "+ref))
	}
	for verdicts < len(refs) {
		apply(core.Finished(time.Now(), <-results))
	}
	wg.Wait()
	return verdicts
}

// BenchmarkFreshWorktree is what a check would cost to set up in a worktree
// made from nothing (git worktree add, then remove) on the same
// repository: the reason checks run in slots that are reset instead.
func BenchmarkFreshWorktree(b *testing.B) {
	repo := sharedRepo(b)
	main, err := repo.RevParse(ctx, "refs/heads/main")
	require.NoError(b, err)
	dir := filepath.Join(benchDir, "fresh")
	b.ResetTimer()
	for range b.N {
		require.NoError(b, repo.AddWorktree(ctx, dir, main))
		require.NoError(b, repo.RemoveWorktree(ctx, dir))
	}
}

// BenchmarkOverlapScan is the host's work when one of 50 refs in flight
// moves, on the repository of 10,000 files and 1,000 commits: the moved
// ref merged with the 49 others (issue 28's goal: at most 1 s). Each
// branch, off main~3, changes its own file and one of ten shared files (so
// each shares a file with four others, on the same line: real overlaps).
// warm: the others did not move since the last scan (the usual case);
// cold: a new host's first scan, nothing known yet.
func BenchmarkOverlapScan(b *testing.B) {
	repo := sharedRepo(b)
	parent, err := repo.RevParse(ctx, "refs/heads/main~3")
	require.NoError(b, err)
	run := int(branches.Add(1000))
	var refs []string
	for i := range 50 {
		name := fmt.Sprintf("wip%d/c%d", run, i)
		c, err := repo.CommitFiles(ctx, parent, map[string]string{
			fmt.Sprintf("wip/c%d.txt", i):                  "mine\n",
			fmt.Sprintf("src/d%02d/f%05d.txt", i%10, i%10): fmt.Sprintf("file\nchanged by c%d\n", i),
		}, "wip", gitrepo.Author{Name: "b", Email: "b@example.com"})
		require.NoError(b, err)
		require.NoError(b, repo.UpdateRef(ctx, "refs/heads/"+name, c, "", "bench"))
		refs = append(refs, name)
	}
	job := host.Job{Kind: host.Scan, Component: "c0", Ref: refs[0]}
	for i, ref := range refs[1:] {
		job.Others = append(job.Others, host.Link{Component: fmt.Sprintf("c%d", i+1), Ref: ref})
	}
	for _, warm := range []bool{true, false} {
		name := map[bool]string{true: "warm", false: "cold"}[warm]
		b.Run(name, func(b *testing.B) {
			r := benchRunner(b, repo, 1)
			if warm {
				r.Run(ctx, job) // the others known
			}
			overlaps := 0
			for i := range b.N {
				b.StopTimer()
				if !warm {
					r.changes, r.merged = map[string][]string{}, map[string][]string{}
				}
				// c0 moves: a new commit on its branch.
				tip, err := repo.RevParse(ctx, "refs/heads/"+refs[0])
				require.NoError(b, err)
				c, err := repo.CommitFiles(ctx, tip, map[string]string{"wip/c0.txt": fmt.Sprintf("mine, %d\n", i)}, "more", gitrepo.Author{Name: "b", Email: "b@example.com"})
				require.NoError(b, err)
				require.NoError(b, repo.UpdateRef(ctx, "refs/heads/"+refs[0], c, tip, "bench"))
				b.StartTimer()
				o := r.Run(ctx, job)
				require.Equal(b, host.Scanned, o.Result, "%+v", o)
				overlaps = len(o.Overlaps)
			}
			b.ReportMetric(float64(overlaps), "overlaps")
		})
	}
}

// BenchmarkLandingReceipt is what a landing's receipt costs (docs/
// PERFORMANCE.md: at most 5 ms): a landing on the repository of 10,000
// files, without a receipt and with one (signed, kept as the landed
// commit's note in refs/notes/foreman and beside the logs), each made on
// main as it is.
func BenchmarkLandingReceipt(b *testing.B) {
	repo := sharedRepo(b)
	key := agentchat.IdentityFromSeed("host", [32]byte{5})
	for _, with := range []bool{false, true} {
		b.Run(fmt.Sprintf("receipt=%v", with), func(b *testing.B) {
			r := benchRunner(b, repo, 1)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				name := fmt.Sprintf("land%d", branches.Add(1))
				base, err := repo.RevParse(ctx, "refs/heads/main")
				require.NoError(b, err)
				tip := branchOff(b, repo, name, 0)
				tree, err := repo.TreeOf(ctx, tip)
				require.NoError(b, err)
				commit, err := repo.CommitMerge(ctx, tree, "Merge "+name+"\n", base, tip)
				require.NoError(b, err)
				j := host.Job{Run: int(branches.Load()), Kind: host.Land, Component: name, Ref: name, Owner: "@b",
					Base: base, Tip: tip, Commit: commit, Tree: tree}
				b.StartTimer()
				if with {
					st := receipt.New(receipt.Landing{Host: key.AgentID(), Target: "refs/heads/main", Component: name, Builder: "@b", Ref: name,
						Approved: receipt.Approval{Tip: tip, Auditors: []string{"@aud"}, Round: 1}, LandedOn: base, Commit: commit, Tree: tree,
						Checks: receipt.Checks{Run: j.Run, Kind: "check", Commit: commit, Tree: tree,
							Commands: []receipt.Command{{Command: "true", Result: "passed"}}, RanOn: []string{"host"}, Sandbox: "off"}})
					j.Receipt, err = receipt.Sign(st, key)
					require.NoError(b, err)
				}
				o := r.Run(ctx, j)
				if o.Result != host.Landed || o.Noted != with {
					b.Fatalf("%+v", o)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/landing")
		})
	}
}

// BenchmarkApprovedCar is what an approval costs before its landing, on
// the repository of 10,000 files, now that the landed commit names its
// auditors: the check before review passed on the target as it is, so a
// car job makes the landing commit again with their names (merge or
// squash) and finds its tree among those that passed: nothing is checked
// again.
func BenchmarkApprovedCar(b *testing.B) {
	repo := sharedRepo(b)
	for _, squash := range []bool{false, true} {
		b.Run(fmt.Sprintf("squash=%v", squash), func(b *testing.B) {
			r := benchRunner(b, repo, 1)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				name := fmt.Sprintf("car%d", branches.Add(1))
				base, err := repo.RevParse(ctx, "refs/heads/main")
				require.NoError(b, err)
				tip := branchOff(b, repo, name, 2)
				m, err := repo.MergeTree(ctx, base, tip)
				require.NoError(b, err)
				j := host.Job{Run: int(branches.Load()), Kind: host.Car, Component: name, Ref: name, Owner: "@b", Base: base, Tip: tip,
					Target: base, Passed: []string{m.Tree}, Auditors: []string{"@aud"}, Squash: squash}
				b.StartTimer()
				if o := r.Run(ctx, j); o.Result != host.Passed || !o.Reused || o.Tree != m.Tree {
					b.Fatalf("%+v", o)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/car")
		})
	}
}
