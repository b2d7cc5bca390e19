package gitjob

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/host/checks"
	"github.com/agentforeman/foreman/internal/host/sandbox"
	"github.com/agentforeman/foreman/internal/host/sandbox/sandboxtest"
)

// arena is what an attacking check goes for: the host's key and
// configuration (files of the test's that the sandbox is told to keep
// out of reach), a file outside the worktree, a listener on 127.0.0.1, the
// host's own process.
type arena struct {
	t        *testing.T
	dir      string
	identity string // the host's key file
	keyLine  string // its private key, as the file holds it
	config   string // the configuration file
	secret   string // a line only the configuration holds
	outside  string // where a check must not write
	ln       net.Listener
	sock     net.Listener  // a unix socket the host user can reach (a tmux, a gpg-agent)
	reached  chan struct{} // one value per connection to sock
	rootOnly string        // a file of root's that only root may read, where checks may look
	fd       int           // the host's key, open on a descriptor the host inherited
	mark     string        // in the command lines of processes an attack leaves
	token    string        // a secret host.env hands the checks
	shmKey   int           // the key of a SysV segment an attack leaves
	// expect is whether the attack is expected to work (its defence off):
	// then what it leaves may take a moment to show, and is waited for.
	expect bool
	during bool // what the attack's during saw
}

func newArena(t *testing.T) *arena {
	t.Helper()
	a := &arena{t: t, dir: t.TempDir()}
	a.identity = filepath.Join(a.dir, "host.json")
	id, err := agentchat.NewIdentity("host")
	require.NoError(t, err)
	require.NoError(t, id.Save(a.identity))
	data, err := os.ReadFile(a.identity)
	require.NoError(t, err)
	_, after, _ := strings.Cut(string(data), `-----BEGIN PRIVATE KEY-----\n`)
	a.keyLine, _, _ = strings.Cut(after, `\n`)
	require.Len(t, a.keyLine, 64)
	a.config = filepath.Join(a.dir, "foreman.yaml")
	a.secret = "room-token-" + strconv.Itoa(os.Getpid())
	require.NoError(t, os.WriteFile(a.config, []byte("# "+a.secret+"\nhost:\n  repo: repo\n"), 0o600))
	a.outside = filepath.Join(a.dir, "outside")
	a.ln, err = net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { a.ln.Close() })
	a.sock, err = net.Listen("unix", filepath.Join(a.dir, "agent.sock"))
	require.NoError(t, err)
	t.Cleanup(func() { a.sock.Close() })
	// As a file of root's under /sys was: in a path checks may read, its
	// mode keeping out every user but its owner.
	a.rootOnly = filepath.Join(a.dir, "readable", "root-only")
	require.NoError(t, os.MkdirAll(filepath.Dir(a.rootOnly), 0o755))
	require.NoError(t, os.WriteFile(a.rootOnly, []byte(a.secret+"\n"), 0o400))
	a.reached = make(chan struct{}, 100)
	go func() {
		for {
			c, err := a.sock.Accept()
			if err != nil {
				return
			}
			c.Close() // at once: the client is not kept waiting for an answer
			select {
			case a.reached <- struct{}{}:
			default:
			}
		}
	}()
	// As a supervisor, socket activation or a wrapper leaves one: open
	// across exec (no O_CLOEXEC), so that every child inherits it.
	// Its number is past 9, as a busy host's is: sh cannot name such a
	// descriptor, and the check reads it with bash.
	low, err := syscall.Open(a.identity, syscall.O_RDONLY, 0)
	require.NoError(t, err)
	a.fd, err = unix.FcntlInt(uintptr(low), unix.F_DUPFD, 20)
	require.NoError(t, err)
	require.NoError(t, syscall.Close(low))
	t.Cleanup(func() { syscall.Close(a.fd) })
	a.mark = fmt.Sprintf("%d.%d", 700000+os.Getpid()%100000, time.Now().UnixNano()%1000000)
	a.token = "ghp_" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-host-env-token"
	a.shmKey = 0x45000000 | int(time.Now().UnixNano()&0xffffff)
	t.Cleanup(func() { a.leftSegment(true) })
	t.Cleanup(func() { a.killLeftovers() })
	return a
}

// env is what the checks are told (host.env): where everything is.
func (a *arena) env() []string {
	return []string{"IDENTITY=" + a.identity, "CONFIG=" + a.config, "OUTSIDE=" + a.outside,
		"PORT=" + strconv.Itoa(a.ln.Addr().(*net.TCPAddr).Port), "MARK=" + a.mark, "HOSTPID=" + strconv.Itoa(os.Getpid()),
		"SOCK=" + a.sock.Addr().String(), "FD=" + strconv.Itoa(a.fd), "TESTBIN=" + os.Args[0], "ROOTONLY=" + a.rootOnly,
		"TOKEN=" + a.token, "SHMKEY=" + strconv.Itoa(a.shmKey)}
}

// leftSegment reports whether a SysV segment of the arena's key is in the
// host's IPC namespace, and removes it if asked.
func (a *arena) leftSegment(remove bool) bool {
	id, err := unix.SysvShmGet(a.shmKey, 0, 0)
	if err != nil {
		return false
	}
	if remove {
		_, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	}
	return true
}

// deny are the host's files, as foreman host hands them to the sandbox.
func (a *arena) deny() []sandbox.Denied {
	return []sandbox.Denied{{Key: "host.identity", Path: a.identity}, {Key: "the configuration file", Path: a.config}}
}

// leftovers are the processes an attack left running.
func (a *arena) leftovers() []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if data, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Contains(data, []byte(a.mark)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func (a *arena) killLeftovers() {
	for _, pid := range a.leftovers() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// left reports whether the attack left a process running. Confined, its
// namespace was gone before the check ended: one look says. Unconfined,
// the detached process may not have exec'd yet: it is waited for.
func (a *arena) left() bool {
	deadline := time.Now().Add(time.Minute)
	for {
		if len(a.leftovers()) > 0 {
			return true
		}
		if !a.expect || time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// connected reports whether a check reached the listener: the connection
// was made before the check ended, so it waits in the listener's queue.
func (a *arena) connected() bool {
	wait := time.Second // nothing should come: a bounded look
	if a.expect {
		wait = time.Minute
	}
	_ = a.ln.(*net.TCPListener).SetDeadline(time.Now().Add(wait))
	c, err := a.ln.Accept()
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// reachedSocket reports whether a check connected to the unix socket.
func (a *arena) reachedSocket() bool {
	wait := time.Second
	if a.expect {
		wait = time.Minute
	}
	select {
	case <-a.reached:
		return true
	case <-time.After(wait):
		return false
	}
}

// attack is a check an attacker wrote: check.sh in the branch it pushed,
// run by the host as sh check.sh.
type attack struct {
	name   string
	script string
	// defence is what stops it: "sandbox" (host.sandbox: without it, the
	// check runs unconfined), "slot check" (the host's check of a slot's
	// .git before its own git runs there), or one defence of the sandbox
	// that a test may turn off alone (sandbox.Without): "allowlist" (the
	// check's own root), "descriptors" (the inherited ones closed).
	defence string
	timeout time.Duration // rules.ci_timeout (default 10s)
	// second, if set, is a second check command, run after sh check.sh.
	second []string
	// during, if set, is started before the check runs and stopped after
	// it: what it saw is in arena.during.
	during func(a *arena, f *fixture) (stop func() bool)
	// onDisk has the check write the host's disk itself, as where no
	// volume can be made (a host that is not root), with its defence and
	// without: the defences that matter there.
	onDisk bool
	// worked says whether the attack did what it wanted.
	worked func(a *arena, f *fixture, o host.Outcome, log string) bool
	// stopped, if set, is what the verdict says when it did not.
	stopped string
}

func attacks() []attack {
	return []attack{
		{name: "print the host's private key", script: `cat "$IDENTITY"`,
			worked: func(a *arena, _ *fixture, _ host.Outcome, log string) bool { return strings.Contains(log, a.keyLine) }},
		{name: "read foreman's configuration", script: `cat "$CONFIG"`,
			worked: func(a *arena, _ *fixture, _ host.Outcome, log string) bool { return strings.Contains(log, a.secret) }},
		{name: "write a file outside the worktree", script: `echo pwned > "$OUTSIDE"`,
			worked: func(a *arena, _ *fixture, _ host.Outcome, _ string) bool { return exists(a.outside) }},
		{name: "move a ref of host.repo (git update-ref)", script: `git update-ref refs/heads/evil HEAD`,
			worked: func(_ *arena, f *fixture, _ host.Outcome, _ string) bool { return f.tipOrEmpty("evil") != "" }},
		{name: "open a TCP connection to 127.0.0.1", script: `bash -c 'echo hi > /dev/tcp/127.0.0.1/'"$PORT"`,
			worked: func(a *arena, _ *fixture, _ host.Outcome, _ string) bool { return a.connected() }},
		{name: "leave a process running (setsid sleep &)", script: `setsid sh -c 'sleep "$MARK" </dev/null >/dev/null 2>&1 &'`,
			worked: func(a *arena, _ *fixture, _ host.Outcome, _ string) bool { return a.left() }},
		{name: "sleep past ci_timeout under setsid", script: `setsid sh -c 'sleep "$MARK" </dev/null >/dev/null 2>&1 &'; sleep 60`,
			timeout: 2 * time.Second, stopped: "timed out after 2s",
			worked: func(a *arena, _ *fixture, _ host.Outcome, _ string) bool { return a.left() }},
		// The resource attacks hold what they took for a few seconds and
		// then pass: the limits are polled (every 100 ms), so on a busy
		// machine a check may take more than its limit for a moment, but
		// not keep it, and not pass.
		{name: "fork a thousand processes", script: `i=0; while [ $i -lt 1000 ]; do sleep 3 & i=$((i+1)); done; echo "spawned $i"; wait`,
			stopped: "stopped: ran more than 100 processes and threads (host.sandbox_limits.processes)",
			worked: func(_ *arena, _ *fixture, o host.Outcome, log string) bool {
				return o.Result == host.Passed && strings.Contains(log, "spawned 1000")
			}},
		{name: "allocate 200 MB", script: `x=$(head -c 200000000 /dev/zero | tr '\0' x); echo "held ${#x}"; sleep 3`,
			stopped: "stopped: used more than 64MiB of memory (host.sandbox_limits.memory)",
			worked: func(_ *arena, _ *fixture, o host.Outcome, log string) bool {
				return o.Result == host.Passed && strings.Contains(log, "held 200000000")
			}},
		{name: "write a 20 MB file", script: `head -c 20000000 /dev/zero > big && wc -c < big`,
			stopped: "File size limit exceeded", // sh says it; the file stopped at host.sandbox_limits.file_size
			worked:  func(_ *arena, _ *fixture, _ host.Outcome, log string) bool { return strings.Contains(log, "20000000") }},
		{name: "read the host's process (/proc/<pid>/environ)", script: `tr '\0' '\n' < /proc/"$HOSTPID"/environ | grep -q PATH= && echo "read the host's environment"`,
			worked: func(_ *arena, _ *fixture, _ host.Outcome, log string) bool {
				return strings.Contains(log, "read the host's environment")
			}},
		{name: "symlink the worktree to / and go through it", script: `ln -s / root; cat "root$IDENTITY"; echo pwned > "root$OUTSIDE"`,
			worked: func(a *arena, _ *fixture, _ host.Outcome, log string) bool {
				return strings.Contains(log, a.keyLine) || exists(a.outside)
			}},
		// Issue 37: what got through the Landlock-filtered filesystem.
		{name: "connect to a unix socket the host user can reach", defence: "allowlist",
			script: `git credential-cache --socket "$SOCK" exit; echo done`,
			worked: func(a *arena, _ *fixture, _ host.Outcome, _ string) bool { return a.reachedSocket() }},
		{name: "read host.repo's git config (a token in a remote's URL)", defence: "allowlist",
			script: `cat "$(git rev-parse --git-common-dir)/config"`,
			worked: func(a *arena, _ *fixture, _ host.Outcome, log string) bool { return strings.Contains(log, a.secret) }},
		{name: "read a descriptor the host inherited", defence: "descriptors",
			script: `bash -c 'cat <&$FD'`,
			worked: func(a *arena, _ *fixture, _ host.Outcome, log string) bool { return strings.Contains(log, a.keyLine) }},
		{name: "touch 512 MB of MAP_SHARED memory", defence: "shared memory",
			script:  `HOG=mapshared SIZE=512000000 "$TESTBIN"`,
			stopped: "stopped: used more than 64MiB of memory (host.sandbox_limits.memory)",
			worked: func(_ *arena, _ *fixture, o host.Outcome, log string) bool {
				return o.Result == host.Passed && strings.Contains(log, "held 512000000")
			}},
		{name: "fill a memfd by write(), never mapped", defence: "shared memory",
			script:  `HOG=memfd SIZE=400000000 "$TESTBIN"`,
			stopped: "stopped: used more than 64MiB of memory (host.sandbox_limits.memory)",
			worked: func(_ *arena, _ *fixture, o host.Outcome, log string) bool {
				return o.Result == host.Passed && strings.Contains(log, "held 400000000")
			}},
		// Issue 45: memory the watcher never saw, since no process maps
		// it.
		{name: "hold 512 MB of SysV shared memory, detached", defence: "memory cgroup",
			script:  `HOG=sysv SIZE=512000000 "$TESTBIN"`,
			stopped: "stopped: used more than 64MiB of memory (host.sandbox_limits.memory)",
			worked: func(_ *arena, _ *fixture, o host.Outcome, log string) bool {
				return o.Result == host.Passed && strings.Contains(log, "held 512000000")
			}},
		// Issue 45: held by no process, a segment would outlive its
		// check, its memory the host's for good.
		{name: "leave a SysV shared memory segment behind", defence: "IPC namespace",
			script: `HOG=sysvleave SIZE=1048576 "$TESTBIN"`,
			worked: func(a *arena, _ *fixture, _ host.Outcome, _ string) bool { return a.leftSegment(false) }},
		{name: "hold 512 MB in memfds in flight on a unix socket", defence: "memory cgroup",
			script:  `HOG=inflight SIZE=512000000 "$TESTBIN"`,
			stopped: "stopped: used more than 64MiB of memory (host.sandbox_limits.memory)",
			worked: func(_ *arena, _ *fixture, o host.Outcome, log string) bool {
				return o.Result == host.Passed && strings.Contains(log, "held 512000000")
			}},
		{name: "read a file only root may read", defence: "nobody",
			script: `cat "$ROOTONLY"`,
			worked: func(a *arena, _ *fixture, _ host.Outcome, log string) bool { return strings.Contains(log, a.secret) }},
		// Issue 45.
		{name: "print a host.env secret in base64", defence: "encoded redaction",
			script: `printf %s "$TOKEN" | base64`,
			worked: func(a *arena, _ *fixture, _ host.Outcome, log string) bool {
				return strings.Contains(log, base64.StdEncoding.EncodeToString([]byte(a.token)))
			}},
		// A root host's check writes through an idmapped bind: what it
		// writes is root's on disk, and its owner may set the setuid bit.
		// Another local user (uid 45045, neither root nor the checks'
		// nobody) runs it while the check waits, wherever it may reach it
		// (host.work, the check's root through /proc), and after.
		{name: "leave a setuid root binary for another user", defence: "setid",
			script: `cp /usr/bin/id .suid-id; chmod 4755 .suid-id; mv .suid-id suid-id; echo planted; i=0
while [ ! -e "$TMPDIR/go-on" ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i+1)); done`,
			during: runPlanted,
			worked: func(a *arena, f *fixture, _ host.Outcome, _ string) bool {
				return a.during || rootAsAnotherUser(planted(f, false)) // while it waited, or after
			}},
		// The host reads the worktree's .git before each check command
		// (for the admin directory the check may read): a check's first
		// command leaves it a fifo, or a link to one (as to /dev/zero),
		// and the host's read before the second blocks until the test
		// feeds it, and takes all it is fed.
		{name: "make .git a fifo the host reads before the next command", defence: "no follow", onDisk: true,
			script: `rm -f .git && mkfifo .git`, second: []string{"true"},
			during: feedFifo(".git"),
			worked: func(a *arena, _ *fixture, _ host.Outcome, _ string) bool { return a.during }},
		{name: "make .git a link to a fifo (as to /dev/zero)", defence: "no follow", onDisk: true,
			script: `mkfifo "$TMPDIR/fifo" && rm -f .git && ln -s "$TMPDIR/fifo" .git`, second: []string{"true"},
			during: feedFifo("fifo"),
			worked: func(a *arena, _ *fixture, _ host.Outcome, _ string) bool { return a.during }},
		{name: "point the worktree's .git at host.repo", defence: "slot check", onDisk: true,
			script: `printf 'gitdir: %s\n' "$(git rev-parse --git-common-dir)" > .git`,
			worked: func(_ *arena, f *fixture, _ host.Outcome, _ string) bool {
				// The host's next reset in that slot ran in host.repo's
				// own git directory: HEAD detached, the index overwritten.
				_, err := f.repo.Git(ctx, "symbolic-ref", "-q", "HEAD")
				return err != nil
			}},
	}
}

// hog is a check's program that makes memory no process's anonymous
// pages hold (HOG=mapshared: MAP_SHARED anonymous memory, every page
// touched; HOG=memfd: memfds filled by write(), never mapped; HOG=sysv: a
// SysV segment, detached; HOG=inflight: memfds whose only reference is in
// flight on a unix socket), SIZE bytes of it, then holds it a few seconds
// and says so.
func hog(mode string) int {
	size, _ := strconv.Atoi(os.Getenv("SIZE"))
	switch mode {
	case "mapshared":
		mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
		if err != nil {
			fmt.Println("mmap:", err)
			return 1
		}
		for i := 0; i < len(mem); i += 4096 {
			mem[i] = 1
		}
	case "memfd":
		// Many of them, each under host.sandbox_limits.file_size, which
		// bounds one file's size, a memfd's too.
		chunk := make([]byte, 512<<10)
		for n := 0; n < size; n += len(chunk) {
			fd, err := unix.MemfdCreate("hog", 0)
			if err != nil {
				fmt.Println("memfd_create:", err)
				return 1
			}
			if _, err := unix.Write(fd, chunk); err != nil {
				fmt.Println("write:", err)
				return 1
			}
		}
	case "sysv":
		// Segments of its own IPC namespace, each touched then detached:
		// no process maps them (one at most, 16 MiB, at a time), and they
		// outlive the process that made them.
		const seg = 16 << 20
		for n := 0; n < size; n += seg {
			id, err := unix.SysvShmGet(unix.IPC_PRIVATE, seg, unix.IPC_CREAT|0o600)
			if err != nil {
				fmt.Println("shmget:", err)
				return 1
			}
			mem, err := unix.SysvShmAttach(id, 0, 0)
			if err != nil {
				fmt.Println("shmat:", err)
				return 1
			}
			for i := 0; i < len(mem); i += 4096 {
				mem[i] = 1
			}
			if err := unix.SysvShmDetach(mem); err != nil {
				fmt.Println("shmdt:", err)
				return 1
			}
		}
	case "sysvleave":
		// A segment of the key SHMKEY, touched and left: no process
		// holds it when the check ends.
		key, _ := strconv.Atoi(os.Getenv("SHMKEY"))
		id, err := unix.SysvShmGet(key, size, unix.IPC_CREAT|unix.IPC_EXCL|0o600)
		if err != nil {
			fmt.Println("shmget:", err)
			return 1
		}
		mem, err := unix.SysvShmAttach(id, 0, 0)
		if err != nil {
			fmt.Println("shmat:", err)
			return 1
		}
		for i := 0; i < len(mem); i += 4096 {
			mem[i] = 1
		}
		_ = unix.SysvShmDetach(mem)
		fmt.Println("left segment", key)
		return 0
	case "inflight":
		// memfds, each filled and sent over a socket to its other end,
		// which never reads them: the only reference to each is in
		// flight, in the socket's queue.
		pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			fmt.Println("socketpair:", err)
			return 1
		}
		chunk := make([]byte, 1<<20) // host.sandbox_limits.file_size bounds one memfd
		var batch []int
		for n := 0; n < size; n += len(chunk) {
			fd, err := unix.MemfdCreate("hog", unix.MFD_CLOEXEC)
			if err != nil {
				fmt.Println("memfd_create:", err)
				return 1
			}
			if _, err := unix.Write(fd, chunk); err != nil {
				fmt.Println("write:", err)
				return 1
			}
			batch = append(batch, fd)
			if len(batch) == 8 || n+len(chunk) >= size { // 8 MiB held open at most
				if err := unix.Sendmsg(pair[0], []byte{0}, unix.UnixRights(batch...), nil, 0); err != nil {
					fmt.Println("sendmsg:", err)
					return 1
				}
				for _, fd := range batch {
					unix.Close(fd)
				}
				batch = batch[:0]
			}
		}
	case "fill":
		// A writer at full speed: 1 MiB files (host.sandbox_limits.
		// file_size bounds one), in its worktree and its TMPDIR by turns,
		// until a write fails, saying how many MiB it wrote as it goes
		// (whenever it is stopped, its log says how far it got).
		chunk := bytes.Repeat([]byte{'x'}, 1<<20)
		n := 0
		for ; ; n++ {
			dir := "."
			if n%2 == 1 {
				dir = os.Getenv("TMPDIR")
			}
			if err := os.WriteFile(filepath.Join(dir, "fill-"+strconv.Itoa(n)), chunk, 0o644); err != nil {
				fmt.Printf("wrote %d MiB, then: %v\n", n, err)
				// The disk stays full until the test's ledger has seen
				// it (its go-on), or the host stops the check.
				for !exists("go-on") {
					time.Sleep(10 * time.Millisecond)
				}
				return 0
			}
			fmt.Printf("wrote %d MiB\n", n+1)
		}
	}
	fmt.Println("held", size)
	time.Sleep(3 * time.Second)
	return 0
}

// feedFifo watches for the check's fifo named name, in its worktree or
// its private directory, and reports whether the host opened it to read
// (a writer then opens it without blocking): if so it writes the host a
// megabyte, which the host takes whole, then ends it.
func feedFifo(name string) func(a *arena, f *fixture) func() bool {
	return func(_ *arena, f *fixture) func() bool {
		done := make(chan struct{})
		fed := make(chan bool, 1)
		go func() {
			for {
				select {
				case <-done:
					fed <- false
					return
				default:
				}
				for _, pattern := range []string{filepath.Join(f.dir, "work", "*", name), filepath.Join(f.dir, "work", "*", "*", name)} {
					paths, _ := filepath.Glob(pattern)
					for _, p := range paths {
						if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
							continue
						}
						fd, err := unix.Open(p, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
						if err != nil {
							continue // nobody reads it
						}
						_ = unix.SetNonblock(fd, false)
						n, err := unix.Write(fd, bytes.Repeat([]byte("x"), 1<<20))
						unix.Close(fd)
						fed <- err == nil && n == 1<<20
						return
					}
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
		return func() bool {
			close(done)
			return <-fed
		}
	}
}

// anotherUser is a local user of the machine: not root, not the checks'.
const anotherUser = 45045

// runPlanted waits for the check's suid-id, has another local user run it
// wherever it is, and then lets the check end: whether it ran as root.
func runPlanted(_ *arena, f *fixture) func() bool {
	done := make(chan struct{})
	root := make(chan bool, 1)
	go func() {
		for {
			select {
			case <-done:
				root <- false
				return
			default:
			}
			if paths := planted(f, true); len(paths) > 0 {
				got := rootAsAnotherUser(paths)
				// The check waits for go-on in its TMPDIR: written as
				// the check sees it (through its root: with a volume,
				// its TMPDIR is an overlay the host's directory is
				// below).
				tmps, _ := filepath.Glob(filepath.Join(f.dir, "work", "run-*.tmp"))
				for _, tmp := range tmps {
					_ = os.WriteFile(filepath.Join(tmp, "go-on"), nil, 0o644)
					for _, pid := range pids() {
						_ = os.WriteFile(filepath.Join("/proc", pid, "root", tmp, "go-on"), nil, 0o644)
					}
				}
				root <- got
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return func() bool {
		close(done)
		return <-root
	}
}

// planted is every suid-id a check left in a slot of the work directory:
// on disk, and, if inside, as each process's root holds it (a check's
// own, its volume, where only /proc reaches); each file once.
func planted(f *fixture, inside bool) []string {
	slots, _ := filepath.Glob(filepath.Join(f.dir, "work", "*"))
	var out []string
	seen := map[[2]uint64]bool{}
	add := func(p string) {
		var st syscall.Stat_t
		if syscall.Stat(p, &st) != nil || seen[[2]uint64{st.Dev, st.Ino}] {
			return
		}
		seen[[2]uint64{st.Dev, st.Ino}] = true
		out = append(out, p)
	}
	for _, slot := range slots {
		add(filepath.Join(slot, "suid-id"))
		if !inside {
			continue
		}
		for _, pid := range pids() {
			add(filepath.Join("/proc", pid, "root", slot, "suid-id"))
		}
	}
	return out
}

// pids are the machine's processes.
func pids() []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, e.Name())
		}
	}
	return out
}

// rootAsAnotherUser runs each of paths as another local user: whether one
// ran as root.
func rootAsAnotherUser(paths []string) bool {
	for _, p := range paths {
		cmd := exec.Command(p, "-u")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: anotherUser, Gid: anotherUser}}
		if out, err := cmd.Output(); err == nil && strings.TrimSpace(string(out)) == "0" {
			return true
		}
	}
	return false
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// TestAttacks runs each attack of issue 30 as a real check through the
// host's path (gitjob, checks, the sandbox): it works without its defence
// and fails with it, so that the test proves the defence, not a missing
// file. -v prints the table docs/RELIABILITY.md shows.
func TestAttacks(t *testing.T) {
	sandboxtest.New(t, sandbox.Config{}) // skips where there is no sandbox
	var table []string
	for _, at := range attacks() {
		t.Run(at.name, func(t *testing.T) {
			if (at.defence == "nobody" || at.defence == "setid") && os.Getuid() != 0 {
				t.Skip("only a host running as root runs its checks as another user")
			}
			if strings.Contains(at.script, "bash") {
				if _, err := exec.LookPath("bash"); err != nil {
					t.Skip("bash (for /dev/tcp) is not installed")
				}
			}
			without, _, _ := runAttack(t, at, false)
			with, o, log := runAttack(t, at, true)
			assert.True(t, without, "without its defence (%s) the attack must work, or the test proves nothing", at.defence)
			assert.False(t, with, "the attack worked against %s:\n%s", at.defence, log)
			if at.stopped != "" {
				assert.Contains(t, o.Line, at.stopped)
			}
			line := o.Line
			if o.Result == host.Passed {
				line = "(passed)"
			}
			row := fmt.Sprintf("| %s | %s | %s | %s |", at.name, verb(without), verb(with), line)
			table = append(table, row)
		})
	}
	t.Logf("\n| attack | without its defence | with it | the verdict's line, with it |\n|---|---|---|---|\n%s", strings.Join(table, "\n"))
}

func verb(worked bool) string {
	if worked {
		return "worked"
	}
	return "failed"
}

// runAttack pushes the attack's check.sh and runs its check, with its
// defence on or off, and says whether it worked.
func runAttack(t *testing.T, at attack, defended bool) (worked bool, o host.Outcome, log string) {
	a := newArena(t)
	bare := at.defence != "slot check" // the .git attack goes for a repository with a work tree
	f := newFixtureWith(t, bare, func(f *fixture, o *Options) {
		o.Checks = [][]string{{"sh", "check.sh"}}
		if at.second != nil {
			o.Checks = append(o.Checks, at.second)
		}
		o.Env = a.env()
		o.Timeout = 10 * time.Second
		if !defended {
			// The leg that proves the attack works must not race the
			// machine's load: forking a thousand processes or filling
			// 200 MB takes what it takes on a busy machine of two cores.
			o.Timeout = 3 * time.Minute
		}
		if at.timeout > 0 {
			o.Timeout = at.timeout
		}
		o.Secrets = []checks.Secret{{Name: "host.env TOKEN", Value: a.token}}
		o.secretsAsIs = at.defence == "encoded redaction" && !defended
		o.Sandbox = nil
		c := sandbox.Config{Deny: a.deny(), Limits: sandbox.Limits{Memory: 64 << 20, Tasks: 100, FileSize: 1 << 20},
			RO: []string{filepath.Dir(os.Args[0]), filepath.Dir(a.rootOnly)}}
		switch {
		case defended || at.defence == "slot check" || at.defence == "encoded redaction":
		case at.defence == "allowlist":
			c.Without.Allowlist = true // today's: the host's filesystem, filtered by Landlock
		case at.defence == "descriptors":
			c.Without.CloseFDs = true
		case at.defence == "shared memory":
			c.Without.SharedMemory = true
		case at.defence == "no follow":
			c.Without.NoFollow = true
		case at.defence == "setid":
			// As before issue 45: the check's writes land on the
			// host's disk, root's, and it may set the bits.
			c.Without.SetID, c.Without.Volumes = true, true
		case at.defence == "IPC namespace":
			c.Without.IPC = true
		case at.defence == "memory cgroup":
			c.Memory = sandbox.MemoryWatcher
		case at.defence == "nobody":
			c.Without.Nobody = true
		default:
			return // unconfined
		}
		if at.onDisk {
			c.Without.Volumes = true
		}
		o.Sandbox = f.sandbox(c)
		require.NotNil(t, o.Sandbox)
		o.trustSlots = at.defence == "slot check" && !defended
	})
	if at.defence == "setid" {
		// Another user may reach the test's directories, as the host's
		// would be reached on a machine; host.work itself is the host's
		// alone (0700), but for the leg without the defence.
		for _, d := range []string{filepath.Dir(f.dir), f.dir} {
			require.NoError(t, os.Chmod(d, 0o755))
		}
		if !defended {
			require.NoError(t, os.Chmod(filepath.Join(f.dir, "work"), 0o755))
		} else {
			fi, err := os.Stat(filepath.Join(f.dir, "work"))
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "host.work is the host's alone")
		}
	}
	_, err := f.repo.Git(ctx, "config", "remote.origin.url", "https://builder:"+a.secret+"@git.example.com/shop.git")
	require.NoError(t, err)
	f.commit("b1/attack", "main", map[string]string{"check.sh": at.script + "\n"}, "a check that attacks")
	var stop func() bool
	if at.during != nil {
		stop = at.during(a, f)
	}
	o = f.check("attack", "b1/attack")
	if stop != nil {
		a.during = stop()
	}
	require.Contains(t, []host.Result{host.Passed, host.Failed}, o.Result, "%+v", o)
	if at.defence == "slot check" {
		// The slot is used again: the host's own git runs there.
		f.commit("b2/next", "main", map[string]string{"next.txt": "x\n"}, "the next READY")
		f.runner.o.Checks = [][]string{{"true"}}
		next := f.check("next", "b2/next")
		require.Equal(t, host.Passed, next.Result, "%+v", next)
	}
	data, err := os.ReadFile(o.Log)
	require.NoError(t, err)
	log = string(data)
	a.expect = !defended
	worked = at.worked(a, f, o, log)
	a.killLeftovers()
	return worked, o, log
}

// A check that fills the disk it writes fills the host's too, where the
// ledger and the logs are: with host.work, host.logs and a ledger on one
// filesystem (a tmpfs of 256 MiB, here), a writer at full speed takes it
// all, and the ledger written meanwhile, as a host writes it, fails. With
// the check's writes in a volume of its own (room for 64 MiB and 32 more), it is
// stopped and told why (or, faster than the host looks, told ENOSPC by the
// kernel first), and the ledger and the log are written whole.
func TestAttacksFillingTheHostsDisk(t *testing.T) {
	sandboxtest.New(t, sandbox.Config{}) // skips where there is no sandbox
	if os.Getuid() != 0 {
		t.Skip("only root mounts the small filesystem the test fills (and only a root host gives checks volumes)")
	}
	for _, defended := range []bool{false, true} {
		small := smallDisk(t, 256<<20)
		f := newFixtureIn(t, small, true, func(f *fixture, o *Options) {
			o.Checks = [][]string{{"sh", "check.sh"}}
			o.Env = []string{"TESTBIN=" + os.Args[0]}
			o.Timeout = 3 * time.Minute
			c := sandbox.Config{RO: []string{filepath.Dir(os.Args[0])}, Limits: sandbox.Limits{FileSize: 1 << 20, Disk: 64 << 20}}
			c.Without.Disk = !defended
			o.Sandbox = f.sandbox(c)
			require.NotNil(t, o.Sandbox)
		})
		f.commit("b1/fill", "main", map[string]string{"check.sh": `HOG=fill "$TESTBIN"` + "\n"}, "a check that fills its disk")

		// The host's ledger, written as the check runs.
		ledger := filepath.Join(small, "ledger.jsonl")
		done := make(chan struct{})
		failed := make(chan error, 1)
		go func() {
			record := append(bytes.Repeat([]byte("r"), 4095), '\n')
			for {
				select {
				case <-done:
					failed <- nil
					return
				default:
				}
				if err := appendTo(ledger, record); err != nil {
					// The check, told ENOSPC, waits for this before it
					// ends, so that the disk stays full until the ledger
					// has seen it (an empty file takes no block).
					slots, _ := filepath.Glob(filepath.Join(f.dir, "work", "slot-*"))
					for _, slot := range slots {
						_ = os.WriteFile(filepath.Join(slot, "go-on"), nil, 0o644)
					}
					failed <- err
					return
				}
				time.Sleep(2 * time.Millisecond) // the ledger's pace, not a wait for anything
			}
		}()
		o := f.check("fill", "b1/fill")
		close(done)
		ledgerErr := <-failed
		if ledgerErr == nil {
			ledgerErr = appendTo(ledger, []byte("after the check\n"))
		}
		if !defended {
			require.Error(t, ledgerErr, "without the bound the check fills the host's disk, or the test proves nothing (%+v)", o)
			t.Logf("without the bound: the ledger's write failed: %v; the check: %s %s", ledgerErr, o.Result, o.Line)
			continue
		}
		require.NoError(t, ledgerErr, "the ledger stays writable")
		require.Equal(t, host.Failed, o.Result, "%+v", o)
		assert.Equal(t, "sh check.sh: stopped: wrote more than 64MiB to its worktree and TMPDIR (host.sandbox_limits.disk)", o.Line)
		log, err := os.ReadFile(o.Log)
		require.NoError(t, err)
		// Stopped as it passed 64 MiB, or, faster than the host looked,
		// told ENOSPC at the volume's room first (its bound and 32 MiB):
		// past the bound by 64 MiB at most (issue 45).
		wrote := lastWrote(string(log))
		// (Its last line may lag what it wrote by a file, and the volume
		// counts directories too: stopped near its bound, not before.)
		assert.GreaterOrEqual(t, wrote, 64-8, "stopped only near its bound:\n%s", log)
		assert.LessOrEqual(t, wrote, 64+64, "past its bound by 64 MiB at most:\n%s", log)
		assert.Contains(t, string(log), "[stopped: wrote more than 64MiB", "and the log, on the same disk, written to its end")
		t.Logf("with the bound: stopped having written %d MiB (bound 64 MiB): %s", wrote, o.Line)
	}
}

// lastWrote is how many MiB the fill writer's log says it wrote last.
func lastWrote(log string) int {
	wrote := -1
	for _, line := range strings.Split(log, "\n") {
		var n int
		if _, err := fmt.Sscanf(line, "wrote %d MiB", &n); err == nil {
			wrote = n
		}
	}
	return wrote
}

// smallDisk is a filesystem of size bytes of the test's own (a tmpfs),
// unmounted at its end.
func smallDisk(t *testing.T, size int64) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size="+strconv.FormatInt(size, 10)+",mode=0700"))
	t.Cleanup(func() {
		// The volumes on it are let go of first (the sandbox's Close,
		// registered after this): its loop devices may take a moment.
		if err := unix.Unmount(dir, 0); err != nil {
			_ = unix.Unmount(dir, unix.MNT_DETACH)
		}
	})
	return dir
}

func appendTo(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Defence in depth: a check that prints the host's key with no sandbox to
// stop it (host.sandbox: off) still cannot put it in its log or its
// verdict, nor a token host.env hands it.
func TestSecretsAreRedactedEvenUnconfined(t *testing.T) {
	a := newArena(t)
	const token = "ghp_T0KEN-that-must-not-leak"
	f := newFixtureWith(t, true, func(f *fixture, o *Options) {
		o.Checks = [][]string{{"sh", "check.sh"}}
		o.Env = append(a.env(), "TOKEN="+token)
		o.Sandbox = nil
		for _, form := range agentchat.SecretForms(a.identity) {
			o.Secrets = append(o.Secrets, checks.Secret{Name: "the host's key", Value: form})
		}
		o.Secrets = append(o.Secrets, checks.Secret{Name: "host.env TOKEN", Value: token})
	})
	f.commit("b1/leak", "main", map[string]string{"check.sh": `cat "$IDENTITY"; echo "error: $TOKEN"; exit 1` + "\n"}, "leak")
	o := f.check("leak", "b1/leak")
	require.Equal(t, host.Failed, o.Result)
	assert.Equal(t, "sh check.sh: error: [redacted: host.env TOKEN]", o.Line)
	data, err := os.ReadFile(o.Log)
	require.NoError(t, err)
	assert.NotContains(t, string(data), a.keyLine)
	assert.NotContains(t, string(data), token)
	assert.Contains(t, string(data), "[redacted: the host's key]")
}
