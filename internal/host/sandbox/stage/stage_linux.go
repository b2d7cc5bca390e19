//go:build linux

package stage

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func init() {
	if len(os.Args) == 0 || os.Args[0] != Marker {
		return
	}
	// Package init runs on the main thread, locked; keep it so: what
	// follows is per thread (capabilities, no_new_privs, Landlock), and
	// the exec must come from the thread that holds them.
	runtime.LockOSThread()
	os.Exit(run())
}

// run confines this process as the Spec says, then runs the check and
// returns its exit status (or why it could not, or what a probe found).
func run() int {
	if _, err := unix.FcntlInt(ReportFD, unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
		return ExitFailed // nobody to tell
	}
	spec, err := readSpec()
	if err != nil {
		return fail("reading what to do", err)
	}
	steps := []struct {
		name string
		do   func(*Spec) error
	}{
		{"building the check's filesystem", func(s *Spec) error {
			if s.Root == "" {
				return mounts(s) // the host's, filtered by Landlock alone
			}
			err := buildRoot(s)
			if s.Userns {
				unix.Close(UsernsFD) // nothing more to map
			}
			return err
		}},
		{"bringing up the private loopback", loopback},
		{"setting limits", limits},
		{"granting the private /proc", grantProc},
		{"granting the check's own paths", grantPaths},
		{"dropping capabilities", dropBounding},
		{"becoming the check's user", becomeUser},
		{"dropping capabilities", dropCaps},
		{"setting no_new_privs", func(*Spec) error { return unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) }},
		{"refusing setuid and setgid bits", refuseSetID},
		{"enforcing Landlock", restrict},
		{"entering the worktree", func(s *Spec) error { return unix.Chdir(s.Dir) }},
	}
	for _, st := range steps {
		if err := st.do(spec); err != nil {
			return fail(st.name, err)
		}
	}
	if spec.Probe {
		return probe(spec)
	}
	return runCheck(spec)
}

// runCheck starts the check's program and stays, PID 1 of the namespace,
// to reap every process that loses its parent (a test runner as PID 1
// would let them pile up as zombies) until the program exits; then it
// kills what is left and exits with the program's status (128+n for a
// signal, as a shell says it). The program is forked from this thread,
// which holds the confinement, and inherits it.
func runCheck(s *Spec) int {
	if !s.KeepFDs {
		// Whatever the host inherited (a supervisor's socket, a wrapper's
		// key file) goes no further: the program gets 0, 1 and 2 only.
		if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
			return fail("closing inherited descriptors", err)
		}
	}
	var sigs chan os.Signal
	if s.Forward {
		// Caught from before the program starts: the host may signal as
		// soon as it reads that it runs.
		sigs = make(chan os.Signal, 8)
		signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2)
	}
	pid, err := syscall.ForkExec(s.Path, s.Args, &syscall.ProcAttr{Dir: s.Dir, Env: s.Env, Files: []uintptr{0, 1, 2}})
	if err != nil {
		return fail("exec "+s.Path, err)
	}
	if sigs != nil {
		go forward(sigs, pid, s.SharedPID)
	}
	unix.Close(ReportFD) // the host reads end of file: the program runs
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return ExitFailed // no child left: cannot happen before pid's
		}
		if got != pid {
			continue // an orphan, reaped
		}
		if !s.SharedPID {
			_ = unix.Kill(-1, unix.SIGKILL) // all but this process, in this namespace
		}
		switch {
		case ws.Exited():
			return ws.ExitStatus()
		case ws.Signaled():
			return 128 + int(ws.Signal())
		}
		return ExitFailed
	}
}

// forward passes the signals a supervisor sends on to every process of
// the namespace but the stage (as a signal to a process group would):
// sent to the stage by its parent, they would otherwise end the stage, and
// with it the namespace, without the program hearing of them. Without a
// namespace of its own (sharedPID), to the program, pid, alone.
func forward(sigs <-chan os.Signal, pid int, sharedPID bool) {
	to := -1
	if sharedPID {
		to = pid
	}
	for sig := range sigs {
		_ = unix.Kill(to, sig.(syscall.Signal))
	}
}

func readSpec() (*Spec, error) {
	f := os.NewFile(SpecFD, "spec")
	defer f.Close()
	var s Spec
	if err := json.NewDecoder(f).Decode(&s); err != nil {
		return nil, err
	}
	if s.Path == "" || len(s.Args) == 0 || s.Dir == "" {
		return nil, errors.New("no program or directory")
	}
	return &s, nil
}

// fail tells the host why the check did not run.
func fail(step string, err error) int {
	msg := step + ": " + err.Error()
	_, _ = unix.Write(ReportFD, []byte(msg))
	return ExitFailed
}

// mounts makes this mount namespace's mounts private (nothing done here
// reaches the host's), then mounts a /proc of this PID namespace, where the
// check sees its own processes only, and, if asked, hides /run and puts
// the run's private directory on /tmp.
func mounts(s *Spec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making / private: %w", err)
	}
	const flags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	if !s.SharedPID { // with the host's PID namespace, the host's /proc is its
		if err := unix.Mount("proc", "/proc", "proc", flags, ""); err != nil {
			return fmt.Errorf("mounting /proc: %w", err)
		}
	}
	if s.HideRun && isDir("/run") {
		if err := unix.Mount("tmpfs", "/run", "tmpfs", flags, "size=64k,mode=755"); err != nil {
			return fmt.Errorf("hiding /run: %w", err)
		}
	}
	if s.Tmp != "" && isDir("/tmp") {
		if err := unix.Mount(s.Tmp, "/tmp", "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("binding %s on /tmp: %w", s.Tmp, err)
		}
	}
	return nil
}

func isDir(path string) bool {
	var st unix.Stat_t
	return unix.Lstat(path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
}

// loopback brings up lo in the private network namespace, which starts
// with it down: tests that serve on 127.0.0.1 work, and reach nothing but
// themselves.
func loopback(s *Spec) error {
	if !s.LoopbackUp {
		return nil
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

func limits(s *Spec) error {
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}); err != nil {
		return fmt.Errorf("core dumps: %w", err)
	}
	if s.FileSize > 0 {
		if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: s.FileSize, Max: s.FileSize}); err != nil {
			return fmt.Errorf("file size: %w", err)
		}
	}
	if s.Tasks > 0 {
		if err := unix.Setrlimit(unix.RLIMIT_NPROC, &unix.Rlimit{Cur: s.Tasks, Max: s.Tasks}); err != nil {
			return fmt.Errorf("processes: %w", err)
		}
	}
	return nil
}

// grantProc adds the fresh /proc to the host's ruleset.
func grantProc(s *Spec) error {
	if s.ProcAccess == 0 || s.NoLandlock {
		return nil
	}
	return grant("/proc", s.ProcAccess)
}

// grantPaths adds the paths of the new root the host could not name.
func grantPaths(s *Spec) error {
	if s.NoLandlock {
		return nil
	}
	for _, g := range s.Grants {
		if err := grant(g.Path, g.Access); err != nil {
			return fmt.Errorf("%s: %w", g.Path, err)
		}
	}
	return nil
}

// grant adds access beneath path to the host's ruleset.
func grant(path string, access uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	attr := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
	_, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, RulesetFD, unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// dropBounding empties the bounding and ambient sets and locks uid 0 out
// of gaining anything at exec: nothing the process or its children do can
// get a capability back.
func dropBounding(*Spec) error {
	const noRoot = 1<<0 | 1<<1 // SECBIT_NOROOT, SECBIT_NOROOT_LOCKED: uid 0 gains nothing at exec
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, noRoot, 0, 0, 0); err != nil {
		return fmt.Errorf("securebits: %w", err)
	}
	for c := 0; c < 64; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if errors.Is(err, unix.EINVAL) {
				break // past the last capability this kernel knows
			}
			return fmt.Errorf("bounding set: %w", err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("ambient set: %w", err)
	}
	return nil
}

// becomeUser makes every thread of the stage the check's user, when the
// host asked for one: its filesystem is built, and the program it starts
// is that user's, owning none of root's files.
func becomeUser(s *Spec) error {
	if s.Uid == 0 {
		return nil
	}
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("groups: %w", err)
	}
	if err := syscall.Setgid(s.Gid); err != nil {
		return fmt.Errorf("gid %d: %w", s.Gid, err)
	}
	if err := syscall.Setuid(s.Uid); err != nil {
		return fmt.Errorf("uid %d: %w", s.Uid, err)
	}
	// A change of user clears the signal the stage gets when the host
	// dies (SysProcAttr.Pdeathsig): set it again, then look whether the
	// host died meanwhile (the read end of the report pipe is gone).
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("dying with the host: %w", err)
	}
	fds := []unix.PollFd{{Fd: ReportFD, Events: unix.POLLOUT}}
	if n, err := unix.Poll(fds, 0); err == nil && n > 0 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
		os.Exit(ExitFailed) // the host is gone: nobody waits for this check
	}
	return nil
}

// dropCaps leaves the process no capability it could use or pass on (a
// host running as root whose checks keep its uid runs them with none of
// root's powers; a check in a user namespace of its own loses them at
// exec anyway, its user id not being 0 there).
func dropCaps(*Spec) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

func restrict(s *Spec) error {
	if s.NoLandlock {
		return unix.Close(RulesetFD)
	}
	_, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, RulesetFD, 0, 0)
	if e != 0 {
		return e
	}
	return unix.Close(RulesetFD)
}

// probe checks, from inside, what the host asked for: PID 1 of a PID
// namespace of its own, no capability, no_new_privs, the filesystem closed
// but for the rules, and no network device but lo when the network is
// private.
func probe(s *Spec) int {
	var missing []string
	if os.Getpid() != 1 {
		missing = append(missing, fmt.Sprintf("not PID 1 of its own PID namespace (PID %d)", os.Getpid()))
	}
	if s.Uid != 0 && (os.Getuid() != s.Uid || os.Geteuid() != s.Uid) {
		missing = append(missing, fmt.Sprintf("not running as uid %d (uid %d)", s.Uid, os.Getuid()))
	}
	if fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		unix.Close(fd)
		missing = append(missing, "Landlock let it list /")
	} else if !errors.Is(err, unix.EACCES) {
		missing = append(missing, "listing / failed with "+err.Error()+", not EACCES")
	}
	if n, _ := unix.PrctlRetInt(unix.PR_CAPBSET_READ, unix.CAP_SYS_ADMIN, 0, 0, 0); n != 0 {
		missing = append(missing, "CAP_SYS_ADMIN still in the bounding set")
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var caps [2]unix.CapUserData
	if err := unix.Capget(&hdr, &caps[0]); err != nil || caps[0].Effective|caps[1].Effective|caps[0].Permitted|caps[1].Permitted != 0 {
		missing = append(missing, "capabilities left")
	}
	if n, _ := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0); n != 1 {
		missing = append(missing, "no_new_privs not set")
	}
	if s.LoopbackUp {
		if devs := netDevices(); strings.Join(devs, ",") != "lo" {
			missing = append(missing, "network devices besides lo: "+strings.Join(devs, ","))
		}
	}
	msg := "ok"
	if len(missing) > 0 {
		msg = strings.Join(missing, "; ")
	}
	_, _ = unix.Write(ReportFD, []byte(msg))
	return 0
}

// netDevices lists the network devices of this network namespace, from
// the fresh /proc.
func netDevices() []string {
	data, err := os.ReadFile("/proc/net/dev")
	if err != nil {
		return []string{"unreadable /proc/net/dev: " + err.Error()}
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n")[2:] {
		if name, _, ok := strings.Cut(line, ":"); ok {
			out = append(out, strings.TrimSpace(name))
		}
	}
	return out
}
