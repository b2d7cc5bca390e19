// Package sandbox confines foreman host's checks: the builders' code, run
// by the host. On Linux, with no daemon and no root, each check command
// runs
//
//   - in PID, mount, IPC and (with host.sandbox_net none) network
//     namespaces of its own, and a user namespace too when the host is not
//     root: its first process (PID 1 there) is the stage, which runs the
//     program and reaps orphans, and kills what is left when the program
//     ends; when the host kills the stage, the kernel ends every process
//     of the namespace (a detached `setsid sleep &` included); the check
//     sees no process of the host's;
//   - with no capability (a host running as root runs its checks as uid 0
//     without root's powers), no_new_privs, core dumps off and a bound on
//     the size of a file;
//   - under Landlock: read the system, read and write its worktree, a
//     private directory (its TMPDIR and HOME) and the caches the
//     configuration names, read host.repo's git directory; nothing else;
//   - watched by the host: its memory and processes, summed over all of
//     them every 100 ms; over a limit, all of them are killed.
//
// The confinement is applied by a re-exec of the host's own binary (package
// stage), which confines itself and starts the program from the confined
// thread. Where the kernel
// cannot do all of it, New refuses: the host says so and stops, never
// runs a check less confined than the configuration promises.
package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/agentforeman/foreman/internal/checkspec"
)

// How a check's memory is counted (host.sandbox_memory; the
// configuration's words: checkspec).
const (
	MemoryCgroup  = checkspec.MemoryCgroup
	MemoryWatcher = checkspec.MemoryWatcher
)

// Net is what network a check has (checkspec).
const (
	NetNone = checkspec.NetNone
	NetAll  = checkspec.NetAll
)

// Config is the host's sandbox: host.sandbox_* and what the host knows it
// must keep from its checks.
type Config struct {
	Net    string   // NetNone (default) or NetAll
	Memory string   // MemoryCgroup (default) or MemoryWatcher
	RO, RW []string // host.sandbox_paths: absolute, ~ expanded
	Limits Limits
	// GitDir is host.repo's git directory: a check reads it (git log,
	// describe, rev-parse in its worktree), never writes it.
	GitDir string
	// Repo is host.repo: no path of RO or RW may hold it or lie in it.
	Repo string
	// Deny are the host's own files: no rule may reach them. A path in RO
	// or RW that holds one, or lies inside one, is refused; the system
	// directories are granted around them.
	Deny []Denied
	// Home is the host user's HOME (default: $HOME). No rule may hold all
	// of it; the caches in RO and RW under it are linked from each
	// check's private HOME at the same place.
	Home string
	// Layers is a directory of the host's where each builder's writes to
	// the RW paths are kept (one layer per builder, over the shared path,
	// which checks never write): "" keeps them for one run only.
	Layers string
	// Without turns defences off, for the tests that prove each one: an
	// attack must work without its defence, or its test proves nothing.
	// The configuration never sets it.
	Without Without
}

// Without names defences a test turns off.
type Without struct {
	Allowlist   bool // the check's own root: the host's filesystem, filtered by Landlock alone
	CloseFDs    bool // descriptors the host inherited reach the check
	Nobody      bool // a host running as root runs its checks as root, with no capability
	CacheLayers bool // RW paths are shared as they are: one check's writes are every later check's
	// SharedMemory counts a check's anonymous memory only (resident less
	// shared): what it makes shared (MAP_SHARED, memfds, /dev/shm) is free.
	SharedMemory bool
	// IPC: the check shares the host's IPC namespace: a SysV segment it
	// leaves outlives it.
	IPC bool
	// NoFollow: the host reads the worktree's .git as any file, following
	// links, whatever it is, however big, and makes a run's own copy of an
	// RW path in its private directory through whatever is there.
	NoFollow bool
	// SetID: a check may set setuid and setgid bits, and the binds it
	// writes are not nosuid.
	SetID bool
	// Volumes: a check writes the host's disk itself, and the host polls
	// what it wrote (as where no volume can be made).
	Volumes bool
	// Disk: nothing bounds what a check writes but the disk.
	Disk bool
}

// MinDisk is the least host.sandbox_limits.disk and .caches may be
// (checkspec).
const MinDisk = checkspec.MinDisk

// Nobody is the user a host running as root runs its checks as.
const Nobody = 65534

// SharedRWEnv, set in the environment of the process that makes the
// sandbox, shares the RW paths between every check as they are
// (Without.CacheLayers): for the tests whose checks talk to the test
// through such a directory, never for a real host. The sandbox says so
// where it describes itself.
const SharedRWEnv = "FOREMANTEST_SANDBOX_SHARED_RW"

// Denied is a path of the host's, named by the key that sets it.
type Denied struct {
	Key  string // host.identity
	Path string
}

// Limits bound one check command; zero takes the default. The
// configuration reads them (checkspec), without the sandbox.
type Limits = checkspec.Limits

// The defaults: see checkspec.
const (
	DefaultMemory   = checkspec.DefaultMemory
	DefaultTasks    = checkspec.DefaultTasks
	DefaultFileSize = checkspec.DefaultFileSize
	DefaultDisk     = checkspec.DefaultDisk
	DefaultCaches   = checkspec.DefaultCaches
)

// Size writes a byte count as the configuration takes it (checkspec.Size).
func Size(n int64) string { return checkspec.Size(n) }

// Run is where one run of the checks works.
type Run struct {
	Worktree string // read and write
	Private  string // read and write: its TMPDIR, and its HOME inside (see Home)
	// Layer is whose writes to the RW paths this run sees and adds to:
	// the builder whose work is checked. "" keeps them for this run only.
	Layer string

	diskSize int64 // the probe's: a small volume
}

// Digest names what the sandbox enforces, as Describe says it, less how
// long its probe took and where its cgroups are: a landing's receipt
// records it ("off" for no sandbox), and two hosts confining their checks
// alike give the same one.
func (s *Sandbox) Digest() string {
	if s == nil {
		return "off"
	}
	var keep []string
	for _, l := range s.Describe() {
		if !strings.HasPrefix(l, "probe:") && !strings.HasPrefix(l, "cgroups:") {
			keep = append(keep, l)
		}
	}
	sum := sha256.Sum256([]byte(strings.Join(keep, "\n")))
	return "sha256:" + hex.EncodeToString(sum[:])
}
