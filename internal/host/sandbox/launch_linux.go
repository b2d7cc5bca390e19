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
	"sync"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/agentforeman/foreman/internal/host/sandbox/stage"
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
func (s *Sandbox) spec(cmd *exec.Cmd, r Run) stage.Spec {
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
	return sp
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
}

// Command makes cmd (its Path, Args, Env and Dir say what to run) start
// confined, in run r: cmd then starts the stage, which confines itself and
// execs the program. After cmd.Start, call Started; after cmd.Wait, Done.
func (s *Sandbox) Command(cmd *exec.Cmd, r Run) (*Process, error) {
	spec, err := json.Marshal(s.spec(cmd, r))
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
	p := &Process{s: s, cmd: cmd, spec: spec, child: []*os.File{specR, repW, rules}, specW: specW, report: repR}
	cmd.Path = "/proc/self/exe"
	cmd.Args = []string{stage.Marker}
	cmd.Env = []string{}
	cmd.ExtraFiles = p.child // at stage.SpecFD, ReportFD, RulesetFD
	attr := &syscall.SysProcAttr{}
	if cmd.SysProcAttr != nil {
		*attr = *cmd.SysProcAttr
	}
	attr.Cloneflags |= syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC
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
	p.closeChild()
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
	p.mu.Lock()
	p.watched = true
	p.mu.Unlock()
	p.s.watch.add(p)
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
func (p *Process) Done() string {
	p.closeChild()
	p.specW.Close()
	p.report.Close()
	p.s.watch.remove(p)
	p.mu.Lock()
	defer p.mu.Unlock()
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
	p.closeChild()
	_, werr := p.specW.Write(p.spec)
	p.specW.Close()
	msg, _ := io.ReadAll(p.report)
	waitErr := cmd.Wait()
	p.Done()
	switch {
	case werr != nil:
		return "", werr
	case waitErr != nil && len(msg) > 0:
		return "", errors.New(string(msg)) // a step of the stage failed
	case waitErr != nil:
		return "", waitErr
	case len(msg) == 0:
		return "", errors.New("the probe said nothing")
	}
	return string(msg), nil
}
