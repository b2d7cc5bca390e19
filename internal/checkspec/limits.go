package checkspec

import (
	"fmt"
	"strconv"
	"strings"
)

// How a check's memory is counted (host.sandbox_memory).
const (
	// MemoryCgroup: by the kernel, each check in a memory cgroup of its
	// own (the default; a host that cannot make one refuses to start).
	MemoryCgroup = "cgroup"
	// MemoryWatcher: by the host, polling each check's processes: what
	// no process maps (a SysV segment held detached, a memfd in flight
	// on a socket) escapes it.
	MemoryWatcher = "watcher"
)

// Net is what network a check has.
const (
	NetNone = "none" // a private network namespace: its own loopback, nothing else
	NetAll  = "all"  // the host's network, unconfined
)

// MinDisk is the least host.sandbox_limits.disk and .caches may be: an
// ext4 of its own wants room for its metadata.
const MinDisk = 16 << 20

// Limits bound one check command; zero takes the default.
type Limits struct {
	Memory   int64 // bytes of anonymous memory of all its processes
	Tasks    int   // its processes and threads, together
	FileSize int64 // bytes: the largest file it may write
	// Disk is bytes it may write to its worktree and private directory
	// (TMPDIR, HOME) together, in one run of the checks.
	Disk int64
	// Caches is bytes every builder's copies of the RW paths hold
	// together: the host's, not one check's.
	Caches int64
}

// The defaults leave room three to four times over for a `go test ./...`
// of foreman itself, with -race or not (at most 1.3 GiB and 225 tasks: see
// TestGoTestFitsTheDefaults and docs/HOST.md).
const (
	DefaultMemory   = 4 << 30
	DefaultTasks    = 1024
	DefaultFileSize = 1 << 30
	// A check's disk and the caches are sparse images: they take on the
	// host's disk what is written in them, and these bounds only cap it.
	// host.max_parallel × Disk + Caches should fit beside the ledger and
	// logs (the host warns at start when it does not).
	DefaultDisk   = 8 << 30
	DefaultCaches = 32 << 30
)

// WithDefaults fills what is zero.
func (l Limits) WithDefaults() Limits {
	if l.Memory <= 0 {
		l.Memory = DefaultMemory
	}
	if l.Tasks <= 0 {
		l.Tasks = DefaultTasks
	}
	if l.FileSize <= 0 {
		l.FileSize = DefaultFileSize
	}
	if l.Disk <= 0 {
		l.Disk = DefaultDisk
	}
	if l.Caches <= 0 {
		l.Caches = DefaultCaches
	}
	return l
}

// Size writes a byte count as the configuration takes it: 4GiB, 512MiB,
// 1000 (bytes).
func Size(n int64) string {
	for _, u := range []struct {
		name  string
		shift uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// ParseSize reads a byte count: a whole number, or one followed by KiB,
// MiB, GiB or TiB (KB, MB... and K, M, G are read the same: powers of
// 1024).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	shift := uint(0)
	upper := strings.ToUpper(t)
	for _, u := range []struct {
		suffixes []string
		shift    uint
	}{{[]string{"TIB", "TB", "T"}, 40}, {[]string{"GIB", "GB", "G"}, 30}, {[]string{"MIB", "MB", "M"}, 20}, {[]string{"KIB", "KB", "K"}, 10}, {[]string{"B"}, 0}} {
		found := false
		for _, suf := range u.suffixes {
			if strings.HasSuffix(upper, suf) {
				t, shift, found = strings.TrimSpace(t[:len(t)-len(suf)]), u.shift, true
				break
			}
		}
		if found {
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<62)>>shift {
		return 0, fmt.Errorf("%q is not a size like 4GiB, 512MiB or 1048576", s)
	}
	return n << shift, nil
}
