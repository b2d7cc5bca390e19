//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/agentforeman/foreman/internal/host/sandbox/stage"
	"github.com/agentforeman/foreman/internal/nofollow"
)

// ruleset builds the Landlock ruleset of one run: everything the check may
// touch, nothing else (the fresh /proc is added by the stage).
func (s *Sandbox) ruleset(r Run) (*os.File, error) {
	gitRead := landlock.AccessFSSet(ll.AccessFSReadFile | ll.AccessFSReadDir)
	var gitDirs []string
	if s.c.GitDir != "" {
		gitDirs = append(gitDirs, s.c.GitDir)
		gitDirs = append(gitDirs, alternates(filepath.Join(s.c.GitDir, "objects"), 0)...)
	}
	rw := landlock.RWDirs(append([]string{r.Worktree, r.Private}, s.rw.dirs...)...)
	if s.abi >= 2 {
		rw = rw.WithRefer() // moving a file between directories of its own
	}
	rules := []landlock.Rule{
		landlock.RODirs(s.system.dirs...),
		landlock.ROFiles(s.system.files...),
		landlock.RODirs(s.etc.dirs...),
		landlock.ROFiles(s.etc.files...).IgnoreIfMissing(),
		landlock.RODirs(s.ro.dirs...),
		landlock.ROFiles(s.ro.files...),
		landlock.PathAccess(gitRead, gitDirs...).IgnoreIfMissing(),
		rw,
		landlock.RWFiles(s.rw.files...),
		landlock.RWFiles(devices...).WithIoctlDev().IgnoreIfMissing(),
	}
	fd, _, err := s.ll.NewRulesetFD(rules...)
	if err != nil {
		return nil, fmt.Errorf("landlock ruleset: %w", err)
	}
	if fd < 0 {
		return nil, errors.New("landlock ruleset: nothing to restrict (this kernel's Landlock handles no right)")
	}
	return os.NewFile(uintptr(fd), "landlock ruleset"), nil
}

// under reports whether any of paths lies under dir.
func under(dir string, paths ...string) bool {
	for _, p := range paths {
		if p != "" && (within(p, dir) || within(real(p), dir)) {
			return true
		}
	}
	return false
}

// spec is what the stage does for cmd in run r.
func (s *Sandbox) spec(cmd *exec.Cmd, r Run, d *diskUse) (stage.Spec, error) {
	dir := cmd.Dir
	if dir == "" {
		dir = r.Worktree
	}
	sp := stage.Spec{
		Path: cmd.Path, Args: cmd.Args, Env: cmd.Env, Dir: dir,
		LoopbackUp: s.c.Net == NetNone,
		ProcAccess: uint64(s.ll.HandledAccessFS & (ll.AccessFSReadFile | ll.AccessFSReadDir)),
		FileSize:   uint64(s.c.Limits.FileSize),
	}
	if sp.Env == nil {
		sp.Env = []string{}
	}
	if s.userns {
		sp.Tasks = uint64(s.c.Limits.Tasks)
	}
	// What the check needs must stay where it is: /tmp and /run are
	// covered only when nothing it needs lies under them.
	needed := append(append([]string{r.Worktree, r.Private, s.c.GitDir, cmd.Path, dir}, s.c.RO...), s.c.RW...)
	if !under("/tmp", needed...) {
		sp.Tmp = r.Private
	}
	sp.HideRun = s.c.Net == NetNone && !under("/run", needed...)
	sp.KeepFDs = s.c.Without.CloseFDs
	sp.RefuseSetID = !s.c.Without.SetID && stage.SetIDRefusable()
	sp.SetIDOK = s.c.Without.SetID
	if s.nobody {
		// Its writable paths are mapped for it (stage.Mount.Idmap): the
		// files stay root's on disk, ctimes and all, and the host's git
		// finds its worktree as it left it.
		sp.Uid, sp.Gid, sp.Userns = Nobody, Nobody, true
	}
	if !s.c.Without.Allowlist {
		if err := s.allowlist(&sp, r, d); err != nil {
			return sp, err
		}
	}
	return sp, nil
}

// diskUse are the volumes a check's writes go to (nil: the host's disk).
type diskUse struct {
	vol, caches *volume
}

// allowlist fills in the check's own filesystem (stage.Spec.Root): the
// system read-only, /etc read-only (Landlock lets it read only what every
// user may), its worktree and private directory read-write, the
// configured paths, and of host.repo's git directory what git needs to
// read the objects and refs, with a config of the host's making: never the
// repository's own (a token in a remote's URL), its hooks, or other
// worktrees' directories.
//
// With volumes, what the check writes to its worktree and private
// directory lands in its own volume (an overlay over each: the host's
// below, never written), and its builder's copies of the RW paths in the
// caches' volume: nothing of it reaches the host's disk.
func (s *Sandbox) allowlist(sp *stage.Spec, r Run, d *diskUse) error {
	sp.Root = filepath.Join(r.Private, rootDir)
	sp.Shm = s.c.Limits.Memory
	sp.Mounts = append(sp.Mounts, s.rootMounts...)
	write := uint64(s.ll.HandledAccessFS & (ll.AccessFSReadFile | ll.AccessFSReadDir | ll.AccessFSWriteFile | ll.AccessFSRemoveFile |
		ll.AccessFSRemoveDir | ll.AccessFSMakeReg | ll.AccessFSMakeDir | ll.AccessFSMakeSym | ll.AccessFSTruncate | ll.AccessFSRefer))
	if s.disk == diskVolumes {
		v, err := s.checkVolume(r)
		if err != nil {
			return fmt.Errorf("the check's disk: %w", err)
		}
		d.vol = v
		sp.Volumes = append(sp.Volumes, v.dev)
		sp.Mounts = append(sp.Mounts, stage.Mount{Source: r.Worktree, Write: true, Idmap: s.nobody, Volume: 1, Upper: "tree"},
			stage.Mount{Source: r.Private, Write: true, Idmap: s.nobody, Volume: 1, Upper: "home"})
		// The overlays are not the host's directories the ruleset names:
		// they get what it grants those (landlock.RWDirs).
		rwDirs := uint64(s.ll.HandledAccessFS & (ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir | ll.AccessFSWriteFile |
			ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar | ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock |
			ll.AccessFSMakeFifo | ll.AccessFSMakeBlock | ll.AccessFSMakeSym | ll.AccessFSTruncate | ll.AccessFSRefer))
		sp.Grants = append(sp.Grants, stage.Grant{Path: r.Worktree, Access: rwDirs}, stage.Grant{Path: r.Private, Access: rwDirs})
	} else {
		sp.Mounts = append(sp.Mounts, stage.Mount{Source: r.Worktree, Write: true, Idmap: s.nobody}, stage.Mount{Source: r.Private, Write: true, Idmap: s.nobody})
	}
	for _, p := range s.ro.dirs {
		sp.Mounts = append(sp.Mounts, stage.Mount{Source: p})
	}
	for _, p := range s.ro.files {
		sp.Mounts = append(sp.Mounts, stage.Mount{Source: p, File: true})
	}
	for i, p := range s.rw.dirs {
		if s.c.Without.CacheLayers {
			sp.Mounts = append(sp.Mounts, stage.Mount{Source: p, Write: true})
			continue
		}
		// No check writes what another builder's checks will run: each
		// builder has its own of this directory, kept between its checks.
		m, err := s.layerMount(sp, r, i, d)
		if err != nil {
			return fmt.Errorf("%s's copy for this run: %w", p, err)
		}
		m.Target = p
		sp.Mounts = append(sp.Mounts, m)
		sp.Grants = append(sp.Grants, stage.Grant{Path: p, Access: write})
	}
	for _, p := range s.rw.files {
		sp.Mounts = append(sp.Mounts, stage.Mount{Source: p, File: true, Write: s.c.Without.CacheLayers})
	}
	sp.Grants = append(sp.Grants, stage.Grant{Path: "/dev/shm", Access: write})
	if s.c.GitDir != "" {
		s.gitMounts(sp, r)
	}
	return nil
}

// layerMount is the mount of run r's copy of the i-th RW directory: in the
// caches' volume (its builder's) or in its own (the run's), or, without
// volumes, as layer says.
func (s *Sandbox) layerMount(sp *stage.Spec, r Run, i int, d *diskUse) (stage.Mount, error) {
	if s.disk != diskVolumes {
		layer, err := s.layer(r, i)
		return stage.Mount{Source: layer, Write: true, Idmap: s.nobody}, err
	}
	if s.c.Layers == "" || r.Layer == "" {
		rel := filepath.Join("layers", strconv.Itoa(i))
		if err := os.MkdirAll(d.vol.path(rel), 0o755); err != nil {
			return stage.Mount{}, err
		}
		if err := os.Chown(d.vol.path(rel), d.vol.uid, d.vol.uid); err != nil {
			return stage.Mount{}, err
		}
		return stage.Mount{Source: rel, Write: true, Volume: 1}, nil
	}
	if d.caches == nil {
		v, err := s.cachesVolume()
		if err != nil {
			return stage.Mount{}, fmt.Errorf("the caches' disk: %w", err)
		}
		d.caches = v
		sp.Volumes = append(sp.Volumes, v.dev)
	}
	rel, err := s.builderLayer(d.caches, r.Layer, i)
	return stage.Mount{Source: rel, Write: true, Volume: len(sp.Volumes)}, err
}

// layer is what run r sees at the i-th RW directory: its builder's own
// copy under Config.Layers (empty at first, kept from one of its checks to
// the next, never seen by another builder's), or, for a run of nobody's,
// one in its private directory, gone with it. Made on first use, owned by
// the user checks run as.
//
// The one in the private directory is made without following a link: an
// earlier command of the run may have left one there.
func (s *Sandbox) layer(r Run, i int) (string, error) {
	if s.c.Layers != "" && r.Layer != "" {
		dir := filepath.Join(s.c.Layers, layerName(r.Layer), strconv.Itoa(i))
		return dir, os.MkdirAll(dir, 0o700)
	}
	rel := filepath.Join(".layers", strconv.Itoa(i))
	if s.c.Without.NoFollow {
		return filepath.Join(r.Private, rel), os.MkdirAll(filepath.Join(r.Private, rel), 0o700)
	}
	return filepath.Join(r.Private, rel), nofollow.MkdirAll(r.Private, rel, 0o700)
}

// layerName is a builder's id made a safe directory name.
func layerName(id string) string {
	var b strings.Builder
	for _, c := range id {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// rootDir is where, in a run's private directory, the stage builds the
// check's root (an empty directory, seen empty by the check).
const rootDir = ".sandbox-root"

// gitMounts gives the check what git reads of host.repo's git directory:
// its objects (and their alternates), refs, packed-refs, HEAD, info and
// shallow, and the admin directory of the check's own worktree, read-only,
// with a config of the host's making (the repository's format, nothing
// else) in place of the repository's.
func (s *Sandbox) gitMounts(sp *stage.Spec, r Run) {
	gd := filepath.Clean(s.c.GitDir)
	for _, name := range []string{"objects", "refs", "info"} {
		if fi, err := os.Stat(filepath.Join(gd, name)); err == nil && fi.IsDir() {
			sp.Mounts = append(sp.Mounts, stage.Mount{Source: filepath.Join(gd, name)})
		}
	}
	for _, alt := range alternates(filepath.Join(gd, "objects"), 0) {
		if fi, err := os.Stat(alt); err == nil && fi.IsDir() {
			sp.Mounts = append(sp.Mounts, stage.Mount{Source: alt})
		}
	}
	for _, name := range []string{"packed-refs", "HEAD", "shallow"} {
		if fi, err := os.Stat(filepath.Join(gd, name)); err == nil && fi.Mode().IsRegular() {
			sp.Mounts = append(sp.Mounts, stage.Mount{Source: filepath.Join(gd, name), File: true})
		}
	}
	if admin := s.worktreeAdmin(r.Worktree, gd); admin != "" {
		sp.Mounts = append(sp.Mounts, stage.Mount{Source: admin})
	}
	read := uint64(s.ll.HandledAccessFS & (ll.AccessFSReadFile | ll.AccessFSReadDir))
	sp.Files = append(sp.Files, stage.File{Path: filepath.Join(gd, "config"), Content: s.gitConfig},
		// git refuses a repository its user does not own ("dubious
		// ownership"): a check running as nobody reads root's.
		stage.File{Path: gitGlobal, Content: "# made by foreman host for its checks\n[safe]\n\tdirectory = *\n"})
	sp.Env = append(sp.Env, "GIT_CONFIG_GLOBAL="+gitGlobal)
	sp.Grants = append(sp.Grants, stage.Grant{Path: gd, Access: read}, stage.Grant{Path: filepath.Dir(gitGlobal), Access: read})
}

// gitGlobal is git's global config in a check's root.
const gitGlobal = "/.foreman/gitconfig"

// worktreeAdmin is the admin directory, in gitDir's worktrees/, of the
// worktree at dir, as its .git file names it; "" when it names none there
// (a check that rewrote it is caught by the host's slot check).
//
// The check may have made its .git anything (a link to /dev/zero, a fifo):
// the host reads it without following a link, only if it is a regular
// file, and no more than a .git file holds.
func (s *Sandbox) worktreeAdmin(dir, gitDir string) string {
	var data []byte
	var err error
	if s.c.Without.NoFollow {
		data, err = os.ReadFile(filepath.Join(dir, ".git"))
	} else {
		data, err = nofollow.ReadFile(dir, ".git", 4096)
	}
	if err != nil {
		return ""
	}
	line, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
	if !ok {
		return ""
	}
	admin := filepath.Clean(strings.TrimSpace(line))
	if filepath.Dir(admin) != filepath.Join(gitDir, "worktrees") {
		return ""
	}
	return admin
}

// Process is one confined check command, from its start to its end.
type Process struct {
	s       *Sandbox
	cmd     *exec.Cmd
	spec    []byte
	child   []*os.File // the stage's ends: closed once it started
	specW   *os.File
	report  *os.File
	mu      sync.Mutex
	stopped string // the limit that stopped it
	watched bool
	cg      *cgroup // its memory and pids cgroup; nil with the watcher
	done    bool    // Done was called: its cgroup removed
	run     Run
	vol     *volume // where it writes; nil: the host's disk
	caches  *volume // where its builder's copies of the RW paths are
	// polled disk: when its worktree and private directory were last
	// summed, and how long that took.
	pollMu   sync.Mutex
	polled   time.Time
	pollCost time.Duration
}

// Command makes cmd (its Path, Args, Env and Dir say what to run) start
// confined, in run r: cmd then starts the stage, which confines itself and
// execs the program. After cmd.Start, call Started; after cmd.Wait, Done.
func (s *Sandbox) Command(cmd *exec.Cmd, r Run) (*Process, error) {
	var d diskUse
	sp, err := s.spec(cmd, r, &d)
	if err != nil {
		return nil, err
	}
	if s.disk == diskPolled {
		s.disks.mu.Lock()
		if _, ok := s.disks.baseline[r.Worktree]; !ok {
			s.disks.baseline[r.Worktree] = diskUsage(r.Worktree, r.Private)
		}
		s.disks.mu.Unlock()
	}
	if sp.Root != "" {
		// An earlier command of the run may have left a link there.
		if err := nofollow.MkdirAll(r.Private, rootDir, 0o700); err != nil {
			return nil, fmt.Errorf("the check's root: %w", err)
		}
	}

	spec, err := json.Marshal(sp)
	if err != nil {
		return nil, err
	}
	rules, err := s.ruleset(r)
	if err != nil {
		return nil, err
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		rules.Close()
		return nil, err
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		rules.Close()
		specR.Close()
		specW.Close()
		return nil, err
	}
	p := &Process{s: s, cmd: cmd, spec: spec, child: []*os.File{specR, repW, rules}, specW: specW, report: repR,
		run: r, vol: d.vol, caches: d.caches}
	if d.caches != nil {
		s.using(r.Layer, 1)
	}
	cmd.Path = "/proc/self/exe"
	cmd.Args = []string{stage.Marker}
	cmd.Env = []string{}
	cmd.ExtraFiles = p.child // at stage.SpecFD, ReportFD, RulesetFD
	if s.nobody {
		cmd.ExtraFiles = append(append([]*os.File{}, p.child...), s.idmap) // at stage.UsernsFD, shared by every run
	}
	attr := &syscall.SysProcAttr{}
	if cmd.SysProcAttr != nil {
		*attr = *cmd.SysProcAttr
	}
	attr.Cloneflags |= syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
	if !s.c.Without.IPC {
		// Its SysV segments and message queues die with the namespace,
		// so with the check (its memory cgroup counts them meanwhile).
		attr.Cloneflags |= syscall.CLONE_NEWIPC
	}
	if s.c.Net == NetNone {
		attr.Cloneflags |= syscall.CLONE_NEWNET
	}
	if s.userns {
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
		attr.GidMappingsEnableSetgroups = false
		// The stage keeps its uid, which is not 0 in the namespace, so
		// its exec would clear the capabilities the namespace gave it:
		// it keeps, as ambient ones, those it needs to set up (mounts,
		// the loopback, dropping the rest), and drops them before the
		// check's exec.
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP}
	}
	// The host gone (killed outright), its checks go too: the namespace
	// ends with its first process.
	attr.Pdeathsig = syscall.SIGKILL
	if s.cg != nil {
		cg, err := s.cg.make(s.c.Limits)
		if err != nil {
			p.closeChild()
			specW.Close()
			repR.Close()
			// The host made one at its start: its cgroup changed since
			// (removed, or out of room for another).
			return nil, fmt.Errorf("%v: the check did not run; see that the host's cgroup %s is still there with room for a child, or restart the host, or set host.sandbox_memory: watcher (weaker)", err, s.cg.memory)
		}
		p.cg = cg
		if cg.dir != nil {
			// cgroup v2: the stage is born in it (clone3 with
			// CLONE_INTO_CGROUP), its every child after it.
			attr.UseCgroupFD = true
			attr.CgroupFD = int(cg.dir.Fd())
		}
	}
	cmd.SysProcAttr = attr
	return p, nil
}

// StageError is a check the stage could not confine or start.
type StageError struct{ Msg string }

func (e *StageError) Error() string { return e.Msg }

// Started finishes the start of the check cmd.Start began: it gives the
// stage what to do and waits for its exec. An error means the check did
// not run (StageError: the stage's reason); the caller still waits for
// cmd. Then the check is watched against its limits until Done.
func (p *Process) Started() error {
	if err := p.handOver(); err != nil {
		return err
	}
	p.mu.Lock()
	p.watched = true
	p.mu.Unlock()
	p.s.watch.add(p)
	return nil
}

// handOver gives the stage, which waits for it before doing anything,
// its cgroup (cgroup v1: the stage is put in it; v2: it was born there),
// then what to do, and reads what it reports: nothing when the check's
// program runs.
func (p *Process) handOver() error {
	p.closeChild()
	if p.cg != nil {
		if err := p.cg.join(p.pid()); err != nil {
			p.specW.Close()
			p.report.Close()
			_ = p.cmd.Process.Kill()
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	_, werr := p.specW.Write(p.spec)
	p.specW.Close()
	msg, _ := io.ReadAll(p.report)
	p.report.Close()
	if len(msg) > 0 {
		return &StageError{Msg: string(msg)}
	}
	if werr != nil {
		return fmt.Errorf("sandbox: handing the stage its work: %w", werr)
	}
	return nil
}

func (p *Process) closeChild() {
	for _, f := range p.child {
		f.Close()
	}
	p.child = nil
}

// Done ends the watch (call it after cmd.Wait, or when cmd.Start failed)
// and says which limit stopped the check, "" if none did.
//
// The check's cgroup is looked at once more (a limit the kernel enforced
// between two looks of the watcher's is said too), then removed.
func (p *Process) Done() string {
	p.closeChild()
	p.specW.Close()
	p.report.Close()
	p.s.watch.remove(p)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return p.stopped
	}
	p.done = true
	if p.cg != nil {
		if over := p.cg.over(p.s.c.Limits); len(over) > 0 && p.stopped == "" && p.watched {
			p.stopped = strings.Join(over, ", and ")
		}
		if err := p.cg.remove(); err != nil && p.stopped == "" {
			p.stopped = err.Error()
		}
	}
	if over := p.s.overDisk(p, true); over != "" && p.stopped == "" && p.watched {
		p.stopped = over
	}
	if p.caches != nil {
		p.s.using(p.run.Layer, -1)
	}
	return p.stopped
}

// stop kills the check for going over a limit: its first process, and with
// it the namespace and everything in it.
func (p *Process) stop(why string) {
	p.mu.Lock()
	if p.stopped == "" {
		p.stopped = why
	}
	p.mu.Unlock()
	// Through the process's pidfd: never a PID reused after the wait.
	_ = p.cmd.Process.Kill()
}

func (p *Process) pid() int { return p.cmd.Process.Pid }

// runProbe runs the stage in probe mode and returns what it found.
func (s *Sandbox) runProbe(r Run) (string, error) {
	cmd := exec.Command("/bin/true")
	cmd.Dir = r.Worktree
	p, err := s.Command(cmd, r)
	if err != nil {
		return "", err
	}
	var spec stage.Spec
	_ = json.Unmarshal(p.spec, &spec)
	spec.Probe = true
	p.spec, _ = json.Marshal(spec)
	if err := cmd.Start(); err != nil {
		p.Done()
		return "", fmt.Errorf("starting a confined process: %w", err)
	}
	err = p.handOver()
	waitErr := cmd.Wait()
	p.Done()
	var said *StageError
	switch {
	case errors.As(err, &said) && waitErr == nil:
		return said.Msg, nil // what the probe found
	case err != nil:
		return "", err // a step of the stage failed
	case waitErr != nil:
		return "", waitErr
	}
	return "", errors.New("the probe said nothing")
}
