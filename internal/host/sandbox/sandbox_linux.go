//go:build linux

package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/agentforeman/foreman/internal/checkspec"
	"github.com/agentforeman/foreman/internal/host/sandbox/stage"
)

// What every check may read (and run): the system. /etc apart: of it, only
// what every user of the machine may read (a host running as root would
// otherwise hand its checks /etc/shadow).
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt"}

// The devices a check may read and write.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// Sandbox is a Config checked against this machine, ready to confine
// checks. Its methods may be called from several goroutines.
type Sandbox struct {
	c      Config
	abi    int
	ll     landlock.Config // the rights this kernel's Landlock handles
	system grants          // read and run
	etc    grants          // read
	ro, rw grants          // host.sandbox_paths
	userns bool            // not root: each check gets a user namespace too
	nobody bool            // root: each check runs as Nobody
	idmap  *os.File        // with nobody: a user namespace mapping root to Nobody, for the checks' writable paths
	probe  time.Duration   // how long the probe at New took
	watch  *watcher
	cg     *cgroups // where each check's memory and pids cgroup is made; nil: the watcher counts
	// disk is how what a check writes is bounded: diskVolumes, diskPolled
	// (diskWhy says why no volume), or "" (Without.Disk).
	disk, diskWhy string
	disks         *disks
	// rootMounts are the system's paths in every check's own root (its
	// worktree, private directory and the configured paths are added per
	// run); gitConfig is the config git finds there for host.repo.
	rootMounts []stage.Mount
	gitConfig  string
}

// New checks c against this machine and makes the sandbox. It refuses,
// with what to do, where the kernel cannot confine checks as c says; it
// runs one confined no-op (a probe) to know it can.
func New(c Config) (*Sandbox, error) {
	if c.Net == "" {
		c.Net = NetNone
	}
	if c.Net != NetNone && c.Net != NetAll {
		return nil, fmt.Errorf("host.sandbox_net: %q is not none or all", c.Net)
	}
	if c.Home == "" {
		c.Home = os.Getenv("HOME")
	}
	if os.Getenv(SharedRWEnv) != "" {
		c.Without.CacheLayers = true
	}
	c.Limits = c.Limits.WithDefaults()
	switch c.Memory {
	case "", MemoryCgroup:
		c.Memory = MemoryCgroup
	case MemoryWatcher:
	default:
		return nil, fmt.Errorf("host.sandbox_memory: %q is not cgroup (the kernel counts a check's memory) or watcher (the host polls it: weaker)", c.Memory)
	}
	if c.Without.SharedMemory {
		c.Memory = MemoryWatcher
	}
	s := &Sandbox{c: c, watch: newWatcher(), disks: newDisks()}
	if c.Memory == MemoryCgroup {
		cg, err := findCgroups()
		if err != nil {
			return nil, fmt.Errorf("host.sandbox_memory: cannot make a memory cgroup for each check (%v); run the host as root where the cgroup v1 memory controller is mounted read-write, or delegate it a cgroup v2 with the memory and pids controllers, or set host.sandbox_memory: watcher (weaker: the host polls each check's processes, and misses memory no process maps)", err)
		}
		s.cg = cg
	}
	s.abi = landlockABI()
	if s.abi < 1 {
		return nil, errors.New("this kernel has no Landlock (Linux 5.13 or later, built with CONFIG_SECURITY_LANDLOCK and landlock in the lsm= boot list): checks cannot be sandboxed; upgrade the kernel or enable Landlock, or set host.sandbox: off to run them unconfined")
	}
	s.ll = landlockConfigs[min(s.abi, len(landlockConfigs))-1]
	s.ll.HandledAccessNet = 0 // the network is a namespace's business
	d := newDenied(c)
	for i, p := range c.RW {
		if filepath.IsAbs(p) {
			if err := os.MkdirAll(p, 0o755); err != nil && !isFile(p) {
				return nil, fmt.Errorf("host.sandbox_paths.rw[%d]: %w", i, err)
			}
		}
	}
	if err := c.CheckPaths(); err != nil {
		return nil, err
	}
	for _, p := range c.RO {
		if fi, err := os.Stat(p); err == nil {
			s.ro.add(p, fi.IsDir())
		}
	}
	for _, p := range c.RW {
		if fi, err := os.Stat(p); err == nil {
			s.rw.add(p, fi.IsDir())
		}
	}
	for _, dir := range systemDirs {
		around(dir, d, &s.system)
	}
	everyone("/etc", d, &s.etc)
	var etc grants
	around("/etc", d, &etc)
	for _, g := range []grants{s.system, etc} {
		for _, p := range g.dirs {
			s.rootMounts = append(s.rootMounts, stage.Mount{Source: p})
		}
		for _, p := range g.files {
			s.rootMounts = append(s.rootMounts, stage.Mount{Source: p, File: true})
		}
	}
	if c.GitDir != "" {
		var err error
		if s.gitConfig, err = gitConfig(c.GitDir); err != nil {
			return nil, fmt.Errorf("host.repo: %w", err)
		}
	}
	s.userns = !hasCap(unix.CAP_SYS_ADMIN)
	s.nobody = !s.userns && os.Getuid() == 0 && !c.Without.Nobody && !c.Without.Allowlist
	if s.nobody {
		var err error
		if s.idmap, err = rootAsNobody(); err != nil {
			return nil, fmt.Errorf("a user namespace that maps root to nobody, for the checks' writable paths: %w; %s", err, s.advice())
		}
	}
	switch {
	case c.Without.Disk:
	case c.Without.Volumes:
		s.disk, s.diskWhy = diskPolled, "no volumes (a test's)"
	case s.userns:
		s.disk, s.diskWhy = diskPolled, "the host is not root, and a loop device and its mount need root"
	case c.Without.Allowlist:
		s.disk, s.diskWhy = diskPolled, "the check's filesystem is the host's (a test's)"
	default:
		s.disk = diskVolumes
		if _, err := mkfs(); err != nil {
			s.disk, s.diskWhy = diskPolled, err.Error()
		}
	}
	start := time.Now()
	err := s.selfTest()
	if err != nil && s.disk == diskVolumes {
		// Confined without volumes, the checks' writes are polled: said
		// where the sandbox describes itself.
		why := err.Error()
		s.disk = diskPolled
		if s.selfTest() == nil {
			s.diskWhy, err = "a check's volume could not be made or mounted here ("+why+")", nil
		}
	}
	if err != nil {
		return nil, err
	}
	s.probe = time.Since(start)
	return s, nil
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// landlockConfigs are go-landlock's configurations by ABI, 1 up.
var landlockConfigs = []landlock.Config{landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5,
	landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}

// landlockABI is the kernel's Landlock ABI, 0 if none. A kernel of ABI 6
// or later without the fix for its signal scoping counts as 5, as
// go-landlock counts it.
func landlockABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 1 {
		return 0
	}
	if v >= 6 {
		if errata, err := ll.LandlockGetErrata(); err != nil || errata&0x2 == 0 {
			v = 5
		}
	}
	return v
}

// hasCap reports whether this process holds capability c (in its user
// namespace): the host needs CAP_SYS_ADMIN to make the checks' namespaces
// without a user namespace of their own.
func hasCap(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[c/32].Effective&(1<<(c%32)) != 0
}

// selfTest runs the stage in probe mode: confined as a check would be, it
// checks from inside what it got.
func (s *Sandbox) selfTest() error {
	dir, err := os.MkdirTemp("", "foreman-sandbox-probe-")
	if err != nil {
		return fmt.Errorf("sandbox probe: %w", err)
	}
	defer os.RemoveAll(dir)
	r := Run{Worktree: filepath.Join(dir, "worktree"), Private: filepath.Join(dir, "private"), diskSize: MinDisk}
	for _, d := range []string{r.Worktree, r.Private} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return fmt.Errorf("sandbox probe: %w", err)
		}
	}
	defer s.forget(r)
	got, err := s.runProbe(r)
	if err != nil {
		return fmt.Errorf("checks cannot be sandboxed here: %v; %s", err, s.advice())
	}
	if got != "ok" {
		return fmt.Errorf("checks cannot be sandboxed here: a confined check found %s; %s", got, s.advice())
	}
	return nil
}

// advice says what to do when the probe fails.
func (s *Sandbox) advice() string {
	if s.userns {
		return "the host is not root, so each check needs a user namespace of its own: allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0, kernel.apparmor_restrict_unprivileged_userns=0), run the host as root, or set host.sandbox: off to run checks unconfined"
	}
	return "set host.sandbox: off to run checks unconfined"
}

// Describe says what this sandbox enforces on this machine, a line each
// (foreman host --check-sandbox, and the host's log at start).
func (s *Sandbox) Describe() []string {
	var out []string
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	out = append(out, fmt.Sprintf("landlock: ABI %d (kernel %s); filesystem rights handled: %s", s.abi, unix.ByteSliceToString(uts.Release[:]), s.ll.HandledAccessFS))
	if s.ll.Scoped != 0 {
		out = append(out, fmt.Sprintf("landlock scopes: %s (no signal or abstract unix socket reaches outside the check)", s.ll.Scoped))
	} else {
		out = append(out, "landlock scopes: none in this ABI (6 or later has them); the PID and network namespaces stand in")
	}
	if s.c.Without.Allowlist {
		if s.ll.HandledAccessFS&ll.AccessFSResolveUnix == 0 {
			out = append(out, "named unix sockets: connect() is not a Landlock right before ABI 9: /run is hidden (with host.sandbox_net none) and /tmp is the check's own (when nothing it needs lies under them), a socket elsewhere that its user may write is reachable")
		}
	} else {
		var mounts []string
		for _, m := range s.rootMounts {
			mounts = append(mounts, m.Source)
		}
		out = append(out, "filesystem: the check's own root (pivot_root into a tmpfs), holding only: "+strings.Join(mounts, " ")+
			" (read-only; /etc readable only where every user may read it), its worktree and private directory (read-write), host.sandbox_paths.ro (read-only), each builder's own copy of host.sandbox_paths.rw (read-write, kept between its checks, never another builder's), of host.repo's git directory its objects, refs, packed-refs, HEAD, info and shallow and the check's worktree's admin directory (read-only) with a config of the host's making, a fresh /proc, a /dev of null zero full random urandom tty, and a private /dev/shm within the memory limit; nothing else (no /run, /var, /home, /root, /sys, /tmp of the host's) can be named, so no unix socket, key or file outside is reachable")
	}
	out = append(out, "descriptors: all but 0, 1 and 2 closed at the check's exec")
	switch {
	case s.c.Without.SetID:
		out = append(out, "setuid and setgid bits: NOT refused (a test's)")
	case stage.SetIDRefusable():
		out = append(out, "setuid and setgid bits: refused (seccomp: chmod, fchmod, fchmodat, fchmodat2, open, openat, creat, mknod and mknodat with S_ISUID or S_ISGID fail with EPERM; openat2 and io_uring_setup with ENOSYS); every mount it can write is nosuid and nodev")
	default:
		out = append(out, "setuid and setgid bits: not refused on "+runtime.GOARCH+" (the filter knows amd64, arm64 and riscv64); every mount it can write is nosuid and nodev, and host.work is the host's alone")
	}
	switch {
	case s.nobody:
		out = append(out, fmt.Sprintf("user: the host is root; checks run as nobody (uid %d), owning none of root's files; their worktree and private directory are nobody's while they run", Nobody))
	case !s.userns:
		out = append(out, "user: checks run as the host's uid, with every capability dropped")
	}
	switch {
	case s.cg != nil:
		where, swap := "cgroup v1", "memory.memsw.limit_in_bytes the same, so no swap"
		if s.cg.v2 {
			where, swap = "cgroup v2", "memory.swap.max 0, memory.oom.group 1"
		} else if s.cg.swapKey == "" {
			swap = "memory.swappiness 0, so no swap"
		}
		out = append(out, fmt.Sprintf("memory: counted by the kernel (host.sandbox_memory: cgroup): each check in a memory cgroup of its own from before its exec (%s), at host.sandbox_limits.memory (%s): all it holds counts, its processes' pages, shared memory none of them maps, SysV segments, memfds in flight, tmpfs files and the page cache it fills; at the limit the kernel reclaims, then kills, and the host stops the check and says why", where, swap))
		if s.cg.v2 || s.cg.pids != "" {
			out = append(out, "processes: counted by the kernel (a pids cgroup, pids.max at host.sandbox_limits.processes): a fork past it fails, and the host stops the check and says why")
		} else {
			out = append(out, "processes: polled by the host every 100 ms (no pids cgroup hierarchy is mounted)")
		}
	case s.c.Without.SharedMemory:
		out = append(out, "memory: anonymous pages only (resident less shared)")
	default:
		out = append(out, "memory: polled by the host every 100 ms (host.sandbox_memory: watcher, weaker than a cgroup): anonymous and shared pages of every process (RssAnon + RssShmem), the memfds they hold, and its /dev/shm; not a SysV segment no process maps, a memfd in flight on a socket, tmpfs files elsewhere or the page cache, and a check can overshoot by what it allocates in 100 ms")
	}
	if s.c.Without.CacheLayers {
		out = append(out, "host.sandbox_paths.rw: SHARED between every check as they are ("+SharedRWEnv+" or a test): one check's writes are every later check's")
	}
	l := s.c.Limits
	switch s.disk {
	case diskVolumes:
		out = append(out, fmt.Sprintf("disk: bounded by the kernel: what a check writes to its worktree and private directory lands in a volume of its own (an ext4 image beside its worktree, sparse, on a loop device, mounted only in its namespace: an overlay over each, the host's files below never written), %s at most (host.sandbox_limits.disk): past it the kernel says ENOSPC, and the host stops the check and says why; nothing it writes reaches the host's disk, where the ledger and logs are", checkspec.Size(l.Disk)))
		if !s.c.Without.CacheLayers && len(s.rw.dirs) > 0 {
			out = append(out, fmt.Sprintf("caches: every builder's copies of host.sandbox_paths.rw in one volume, %s at most (host.sandbox_limits.caches); past three quarters full, the copies least recently used are dropped at a run's start, down to half", checkspec.Size(l.Caches)))
		}
	case diskPolled:
		out = append(out, fmt.Sprintf("disk: polled by the host (%s), every %d ms or less often where summing takes long: what a check's worktree and private directory hold past their run's start, at most %s (host.sandbox_limits.disk); a check can overshoot by what it writes between two sums; the caches are summed at each run's start (host.sandbox_limits.caches, %s)", s.diskWhy, Interval.Milliseconds(), checkspec.Size(l.Disk), checkspec.Size(l.Caches)))
	default:
		out = append(out, "disk: NOT bounded (a test's): a check may fill the host's disk")
	}
	ns := "pid, mount, ipc"
	if s.c.Without.IPC {
		ns = "pid, mount (the host's IPC namespace SHARED: a test's)"
	}
	if s.c.Net == NetNone {
		ns += ", network (host.sandbox_net none: its own loopback, nothing else)"
	} else {
		ns += "; network NOT confined (host.sandbox_net all)"
	}
	switch {
	case s.userns:
		ns += ", user (the host is not root: the check keeps its uid, with no capability)"
	case s.nobody:
		ns += " (the host has CAP_SYS_ADMIN: it builds the check's filesystem, then the check runs as nobody with no capability)"
	default:
		ns += " (the host has CAP_SYS_ADMIN: checks run as its uid with every capability dropped)"
	}
	out = append(out, "namespaces: "+ns)
	out = append(out, fmt.Sprintf("limits: memory %s (host.sandbox_limits.memory), processes and threads %d (host.sandbox_limits.processes), file size %s (host.sandbox_limits.file_size), core dumps off", checkspec.Size(l.Memory), l.Tasks, checkspec.Size(l.FileSize)))
	reads := append(append(append([]string{}, s.system.dirs...), s.system.files...), "/etc (what every user may read)", "/proc (its own)")
	if s.c.GitDir != "" {
		reads = append(reads, s.c.GitDir+" (host.repo's git directory)")
	}
	out = append(out, "reads: "+strings.Join(reads, " "))
	if len(s.ro.dirs)+len(s.ro.files) > 0 {
		out = append(out, "reads (host.sandbox_paths.ro): "+strings.Join(append(append([]string{}, s.ro.dirs...), s.ro.files...), " "))
	}
	rw := append(append([]string{"its worktree,", "its private TMPDIR and HOME,"}, s.rw.dirs...), s.rw.files...)
	out = append(out, "writes: "+strings.Join(append(rw, devices...), " "))
	if s.cg != nil {
		where := s.cg.memory
		if s.cg.pids != "" {
			where += " and " + s.cg.pids
		}
		out = append(out, "cgroups: made under "+where)
	}
	out = append(out, fmt.Sprintf("probe: a confined no-op ran and found itself confined (%d ms)", s.probe.Milliseconds()))
	return out
}

// rootAsNobody makes a user namespace whose root is Nobody outside (uid and
// gid), and returns it open: mounts made through it (idmapped) show
// root's files as nobody's. A short-lived process is made in it, held
// until its namespace is open, then ended: the open file keeps the
// namespace.
func rootAsNobody() (*os.File, error) {
	cmd := exec.Command("/bin/sh", "-c", "read line")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: Nobody, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: Nobody, Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	return os.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid))
}

// gitConfig is the config of the host's making that git finds in a
// check's root for host.repo: the repository's format and extensions,
// nothing else (no remote, no credential, no hook path, no alias).
func gitConfig(gitDir string) (string, error) {
	cmd := exec.Command("git", "config", "--file", filepath.Join(gitDir, "config"), "--null", "--get-regexp",
		`^(core\.repositoryformatversion|core\.bare|extensions\..*)$`)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1", "HOME=/nonexistent"}
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) { // 1: none of them set
		return "", fmt.Errorf("reading %s/config: %w", gitDir, err)
	}
	sections := map[string][]string{}
	var order []string
	for _, kv := range strings.Split(string(out), "\x00") {
		key, value, ok := strings.Cut(kv, "\n")
		if !ok {
			continue
		}
		section, name, _ := strings.Cut(key, ".")
		if strings.ContainsAny(value, "\n\"\\;#") || strings.ContainsAny(name, " \n=[]") {
			continue // never in a format key; nothing to quote
		}
		if _, seen := sections[section]; !seen {
			order = append(order, section)
		}
		sections[section] = append(sections[section], "\t"+name+" = "+value+"\n")
	}
	var b strings.Builder
	b.WriteString("# made by foreman host for its checks: host.repo's format, nothing else\n")
	for _, sec := range order {
		b.WriteString("[" + sec + "]\n" + strings.Join(sections[sec], ""))
	}
	return b.String(), nil
}

// alternates lists the object directories git's alternates name, from
// objects/info/alternates, following theirs (a few levels).
func alternates(objects string, depth int) []string {
	if depth > 4 {
		return nil
	}
	f, err := os.Open(filepath.Join(objects, "info", "alternates"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !filepath.IsAbs(line) {
			line = filepath.Join(objects, line)
		}
		out = append(out, line)
		out = append(out, alternates(line, depth+1)...)
	}
	return out
}

// MakeHome makes a run's private HOME in its private directory (see
// Config.MakeHome).
func (s *Sandbox) MakeHome(private string) (string, error) { return s.c.MakeHome(private) }
