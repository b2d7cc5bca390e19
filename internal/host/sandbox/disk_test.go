//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// needVolumes skips a test of the checks' volumes where the host makes
// none (not root), and fails it where it should (root, and CI's
// FOREMANTEST_REQUIRE_SANDBOX).
func needVolumes(t *testing.T, s *Sandbox) {
	t.Helper()
	if s.disk == diskVolumes {
		return
	}
	if os.Getuid() == 0 && os.Getenv("FOREMANTEST_REQUIRE_SANDBOX") != "" {
		t.Fatalf("no volumes for the checks on this machine, as root: %s", s.diskWhy)
	}
	t.Skipf("no volumes here: %s", s.diskWhy)
}

// fill writes n MiB, 1 MiB a file, in its worktree and TMPDIR by turns,
// then says how much it wrote.
func fill(n int) string {
	return fmt.Sprintf(`i=0; while [ $i -lt %d ]; do
	if [ $((i %% 2)) = 0 ]; then d=.; else d="$TMPDIR"; fi
	head -c 1048576 /dev/zero > "$d/fill-$i" || break
	i=$((i+1))
done; echo "wrote $i MiB"`, n)
}

// What a check writes lands in a volume of its own (its worktree and
// private directory are overlays there, the host's files below them never
// written), bounded by host.sandbox_limits.disk: past it, the check is
// stopped and told. Run again fresh, it has all its disk again.
func TestAChecksWritesAreBoundedByItsVolume(t *testing.T) {
	s := newSandbox(t, Config{Limits: Limits{Disk: 32 << 20}})
	needVolumes(t, s)
	r := box(t)
	require.NoError(t, os.WriteFile(filepath.Join(r.Worktree, "tracked"), []byte("the host's\n"), 0o644))
	require.NoError(t, s.Fresh(r))
	res := run(t, s, r, `echo changed > tracked && `+fill(8))
	require.NoError(t, res.err, res.out)
	data, err := os.ReadFile(filepath.Join(r.Worktree, "tracked"))
	require.NoError(t, err)
	assert.Equal(t, "the host's\n", string(data), "the host's worktree is never written")
	assert.NoFileExists(t, filepath.Join(r.Worktree, "fill-0"))
	assert.NoFileExists(t, filepath.Join(r.Private, "fill-1"))

	// A later command of the run sees what the first wrote, and what it
	// writes counts with it.
	res = run(t, s, r, `cat tracked; ls fill-0; test -e "$TMPDIR/fill-1" && echo "fill-1 in TMPDIR"; `+fill(100))
	assert.Contains(t, res.out, "changed\nfill-0\nfill-1 in TMPDIR\n")
	assert.Equal(t, "wrote more than 32MiB to its worktree and TMPDIR (host.sandbox_limits.disk)", res.stopped, res.out)
	assert.Error(t, res.err)

	// A new run does not.
	require.NoError(t, s.Fresh(r))
	res = run(t, s, r, `cat tracked; ls fill-0 2>/dev/null || echo "no fill-0"; `+fill(8))
	require.NoError(t, res.err, res.out)
	assert.Equal(t, "the host's\nno fill-0\nwrote 8 MiB\n", res.out)
	assert.Empty(t, res.stopped)
}

// A disk bound smaller than the worktree: the bound is on what the check
// writes, not what it was given, so a check that reads a 48 MiB worktree
// under a 16 MiB bound passes; one that copies it is stopped and told.
func TestADiskBoundSmallerThanTheWorktree(t *testing.T) {
	s := newSandbox(t, Config{Limits: Limits{Disk: 16 << 20}})
	needVolumes(t, s)
	r := box(t)
	for i := 0; i < 6; i++ {
		require.NoError(t, os.WriteFile(filepath.Join(r.Worktree, fmt.Sprintf("data-%d", i)), make([]byte, 8<<20), 0o644))
	}
	require.NoError(t, s.Fresh(r))
	res := run(t, s, r, `cat data-* | wc -c`)
	require.NoError(t, res.err, res.out)
	assert.Equal(t, "50331648\n", res.out)
	res = run(t, s, r, `mkdir copy && cp data-* copy/; echo "copied $?"`)
	assert.Equal(t, "wrote more than 16MiB to its worktree and TMPDIR (host.sandbox_limits.disk)", res.stopped, res.out)
}

// Where no volume can be made (a host that is not root), the host sums
// what the check's worktree and private directory hold as it runs: past
// the bound, the check is stopped and told, having written what it wrote
// between two sums more (said here: the overshoot).
func TestAChecksWritesArePolledWithoutAVolume(t *testing.T) {
	s := newSandbox(t, Config{Limits: Limits{Disk: 32 << 20}, Without: Without{Volumes: true}})
	require.Equal(t, diskPolled, s.disk)
	r := box(t)
	require.NoError(t, s.Fresh(r))
	res := run(t, s, r, fill(2000))
	assert.Equal(t, "wrote more than 32MiB to its worktree and TMPDIR (host.sandbox_limits.disk)", res.stopped, res.out)
	held := diskUsage(r.Worktree, r.Private)
	t.Logf("polled: stopped holding %d MiB (bound 32 MiB)", held>>20)
	assert.Less(t, held, int64(2000<<20), "stopped before it wrote all it meant to")
	assert.True(t, strings.Contains(strings.Join(s.Describe(), "\n"), "disk: polled by the host"))
}

// The builders' copies of the RW paths share one volume, bounded by
// host.sandbox_limits.caches: at a run's start, past three quarters full,
// the copies least recently used are dropped (never the running builder's
// own), down to half; a check that fills it is stopped and told.
func TestTheCachesAreBounded(t *testing.T) {
	cache := t.TempDir()
	s := newSandbox(t, Config{RW: []string{cache}, Layers: filepath.Join(t.TempDir(), "layers"), Limits: Limits{Caches: 64 << 20}})
	needVolumes(t, s)
	write := func(builder string, mib int) result {
		r := box(t)
		r.Layer = builder
		require.NoError(t, s.Fresh(r))
		return run(t, s, r, fmt.Sprintf(`head -c %d /dev/zero > "$CACHE/entry" && echo cached`, mib<<20), "CACHE="+cache)
	}
	has := func(builder string) bool {
		r := box(t)
		r.Layer = builder
		return run(t, s, r, `test -e "$CACHE/entry" && echo yes || echo no`, "CACHE="+cache).out == "yes\n"
	}
	for _, b := range []string{"@b1", "@b2", "@b3"} {
		res := write(b, 18)
		require.NoError(t, res.err, res.out)
	}
	require.True(t, has("@b1") && has("@b2") && has("@b3"), "54 MiB of 64: nothing dropped yet")
	res := write("@b4", 1) // 55 of 64, past three quarters: the least recently used go, down to half
	require.NoError(t, res.err, res.out)
	assert.False(t, has("@b1"), "the least recently used copy was dropped")
	assert.True(t, has("@b4"), "the running builder's own is kept")

	res = write("@b5", 200)
	assert.Equal(t, "filled the caches: every builder's copies of host.sandbox_paths.rw hold 64MiB together (host.sandbox_limits.caches)", res.stopped, res.out)
}

// A host.work whose filesystem cannot hold what max_parallel checks and
// the caches may write is said at start, with what to change.
func TestTheHostSaysWhenItsDiskIsTooSmall(t *testing.T) {
	s := newSandbox(t, Config{Limits: Limits{Disk: 1 << 40, Caches: 1 << 40}})
	dir := filepath.Join(t.TempDir(), "not", "made", "yet")
	w := s.DiskRoom(dir, 4)
	assert.Contains(t, w, "host.work: its filesystem has ")
	assert.Contains(t, w, "host.max_parallel 4 × host.sandbox_limits.disk 1TiB, and host.sandbox_limits.caches 1TiB")
	s = newSandbox(t, Config{Limits: Limits{Disk: MinDisk, Caches: MinDisk}})
	assert.Empty(t, s.DiskRoom(dir, 1))
}

// A volume has room for its bound and at most 64 MiB more (issue 45: the
// most a check may write past host.sandbox_limits.disk before it is
// stopped, the kernel refusing a write past the volume's room), and at
// least 16 MiB more, so the host sees a check past its bound before the
// kernel refuses it a write: whatever the bound, the least allowed, the
// default disk and caches, and one larger. The images are sparse.
func TestAVolumesRoomIsItsBoundAndLittleMore(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("only root attaches a loop device")
	}
	if _, err := mkfs(); err != nil {
		if os.Getenv("FOREMANTEST_REQUIRE_SANDBOX") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	dir := t.TempDir()
	for _, bound := range []int64{MinDisk, 64 << 20, 1 << 30, DefaultDisk, DefaultCaches, 100 << 30} {
		v, err := openVolume(filepath.Join(dir, Size(bound)+".disk"), bound, os.Getuid())
		require.NoError(t, err)
		require.NoError(t, v.clear(volumeDirs...))
		var st syscall.Statfs_t
		require.NoError(t, syscall.Fstatfs(int(v.mnt.Fd()), &st))
		room := int64(st.Bavail) * st.Bsize
		v.close()
		require.NoError(t, os.Remove(v.image))
		t.Logf("bound %s: room %d MiB more", Size(bound), (room-bound)>>20)
		assert.GreaterOrEqual(t, room-bound, int64(16<<20), "bound %s", Size(bound))
		assert.LessOrEqual(t, room-bound, int64(64<<20), "bound %s", Size(bound))
	}
}
