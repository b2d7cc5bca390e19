package verify

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/host/receipt"
)

// BenchmarkVerify is foreman verify over VERIFY_LANDINGS single landings
// [1,000] of one chain, anchored by the host's signed head, the page cache
// dropped before each run where this machine lets it (root): what is
// measured starts from the disk (docs/PERFORMANCE.md: 10,000 in at most
// 10 s). Making the history is not counted.
func BenchmarkVerify(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("VERIFY_LANDINGS")); err == nil && v > 0 {
		n = v
	}
	g := bigHistory(b, n)
	k, err := receipt.KeyOf(g.key.PublicPEM())
	require.NoError(b, err)
	o := Options{Repo: g.repo, Target: "main", Trusted: []receipt.Key{k}, Repository: "shop", Now: now}
	dropped := dropCaches() == nil
	for b.Loop() {
		if dropped {
			b.StopTimer()
			_ = dropCaches()
			b.StartTimer()
		}
		rep, err := Run(ctx, o)
		if err != nil || !rep.OK() || rep.Landed != n {
			b.Fatalf("%d landed of %d (%v):\n%s", rep.Landed, n, err, rep.Table())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/verify")
	b.ReportMetric(float64(n), "landings")
	if !dropped {
		b.Logf("the page cache could not be dropped (not root?): measured warm")
	}
}

// dropCaches writes the dirty pages and drops the page cache, as
// `sync; echo 3 > /proc/sys/vm/drop_caches` does (root only).
func dropCaches() error {
	if err := exec.Command("sync").Run(); err != nil {
		return err
	}
	return os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0o200)
}

// bigHistory is a target of n single landings, each a merge of an approved
// commit onto the landing before it, noted with its chained receipt, and
// the host's head signed: made with git fast-import (two streams, the
// commits, then the notes, whose receipts name the commits' ids), not a
// process per commit.
func bigHistory(b *testing.B, n int) *target {
	b.Helper()
	g := newTarget(b)
	g.chained = true
	dir := g.repo.Dir()
	var in bytes.Buffer
	fmt.Fprintf(&in, "reset refs/heads/main\nfrom %s\n\n", g.start)
	for i := range n {
		file := fmt.Sprintf("c%05d.txt", i)
		parent := ":" + strconv.Itoa(2*i)
		if i == 0 {
			parent = g.start
		}
		// The approved commit, on the landing before it; then its merge.
		fmt.Fprintf(&in, "commit refs/heads/work\nmark :%d\ncommitter b1 <b1@example.com> 1764320000 +0000\ndata 5\nwork\nfrom %s\nM 644 inline %s\ndata 2\n%d\n\n",
			2*i+1, parent, file, i%10)
		fmt.Fprintf(&in, "commit refs/heads/main\nmark :%d\ncommitter foreman <host@example.com> 1764320000 +0000\ndata 6\nmerge\nfrom %s\nmerge :%d\nM 644 inline %s\ndata 2\n%d\n\n",
			2*i+2, parent, 2*i+1, file, i%10)
	}
	marks := filepath.Join(b.TempDir(), "marks")
	cmd := exec.Command("git", "fast-import", "--quiet", "--export-marks="+marks)
	cmd.Dir, cmd.Stdin = dir, &in
	out, err := cmd.CombinedOutput()
	require.NoError(b, err, "%s", out)
	ids := map[int]string{}
	data, err := os.ReadFile(marks)
	require.NoError(b, err)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		mark, id, _ := strings.Cut(sc.Text(), " ")
		m, _ := strconv.Atoi(strings.TrimPrefix(mark, ":"))
		ids[m] = id
	}
	line, err := g.repo.FirstParents(ctx, ids[2*n], g.start)
	require.NoError(b, err)
	trees := map[string]string{}
	for _, c := range line {
		trees[c.ID] = c.Tree
	}
	var notes bytes.Buffer
	notes.WriteString("commit refs/notes/foreman\ncommitter foreman <host@example.com> 1764320000 +0000\ndata 8\nreceipts\n")
	base := g.start
	for i := range n {
		merge, tip := ids[2*i+2], ids[2*i+1]
		tree := trees[merge]
		l := receipt.Landing{Host: g.key.AgentID(), Target: "refs/heads/main", Component: fmt.Sprintf("c%05d", i), Builder: "@b1", Ref: "b1/c",
			Approved: receipt.Approval{Tip: tip, Auditors: []string{"@aud"}, Round: 1}, LandedOn: base, Commit: merge, Tree: tree,
			Checks: receipt.Checks{Run: i + 1, Kind: "car", Commit: merge, Tree: tree, Commands: []receipt.Command{{Command: "make test", Result: "passed"}},
				Tries: []receipt.Log{{Name: "c.log", Digest: receipt.Digest([]byte("ok"))}}, RanOn: []string{"host"}, Sandbox: "off"},
			At: time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC), LandedAs: receipt.LandedAsMerge}
		note := g.sign(&l, g.key, nil)
		fmt.Fprintf(&notes, "N inline %s\ndata %d\n%s\n", merge, len(note), note)
		base = merge
	}
	cmd = exec.Command("git", "fast-import", "--quiet")
	cmd.Dir, cmd.Stdin = dir, &notes
	out, err = cmd.CombinedOutput()
	require.NoError(b, err, "%s", out)
	g.signHead(now.Add(-time.Minute), nil)
	return g
}
