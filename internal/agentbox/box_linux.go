//go:build linux

package agentbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/agentforeman/foreman/internal/host/sandbox"
	"github.com/agentforeman/foreman/internal/host/sandbox/stage"
)

// Process is one confined agent: its stage, PID 1 of the agent's
// namespace, from its start to its end.
type Process struct {
	cmd *exec.Cmd
	// UID is the user the agent runs as (0: foreman's own, in a user
	// namespace when foreman is not root).
	UID int
}

// Pid is the stage's process id, in foreman's PID namespace.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the agent: the stage passes SIGTERM, SIGINT,
// SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 on to every process of the agent's
// namespace (as to a process group); SIGKILL ends the stage, and with it
// everything in the namespace.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Wait waits for the agent's end (its stage exits with its status, 128+n
// for a signal n).
func (p *Process) Wait() error { return p.cmd.Wait() }

// Launch starts spec's agent confined as cfg says. It refuses, saying
// what to change, a grant that would reach a denied path, and where the
// kernel cannot confine it (never starts it less confined).
func Launch(cfg Config, spec Spec) (*Process, error) {
	if spec.Name == "" || len(spec.Argv) == 0 || !filepath.IsAbs(spec.Dir) {
		return nil, fmt.Errorf("agent %q: a name, a command and an absolute workspace are needed (workspace %q, command %q)", spec.Name, spec.Dir, spec.Argv)
	}
	llc, abi, err := sandbox.Landlock()
	if err != nil && !cfg.Without.Landlock {
		return nil, fmt.Errorf("agent %s cannot be confined: %w", spec.Name, err)
	}
	prog, err := program(spec)
	if err != nil {
		return nil, err
	}
	for _, w := range spec.Writable {
		if !filepath.IsAbs(w) {
			return nil, fmt.Errorf("agent %s: writable path %q is not absolute", spec.Name, w)
		}
	}
	// Checked before one is made: a path refused leaves nothing made.
	if err := cfg.check(spec, prog); err != nil {
		return nil, err
	}
	for _, w := range spec.Writable {
		if err := os.MkdirAll(w, 0o700); err != nil && !isFile(w) {
			return nil, fmt.Errorf("agent %s: writable path %s: %w", spec.Name, w, err)
		}
	}
	userns := !sandbox.HasCap(unix.CAP_SYS_ADMIN)
	uid := 0
	if !userns && os.Geteuid() == 0 && !cfg.Without.OwnUID {
		uid = uidOf(spec.Name, cfg.UIDBase)
		if err := own(spec, cfg.ownDir(spec), uid); err != nil {
			return nil, err
		}
	}
	sp := stage.Spec{
		Path: prog, Args: spec.Argv, Env: spec.Env, Dir: spec.Dir,
		ProcAccess: uint64(llc.HandledAccessFS & (ll.AccessFSReadFile | ll.AccessFSReadDir)),
		Uid:        uid, Gid: uid,
		Forward:     true,
		SharedPID:   cfg.Without.PIDNamespace,
		NoLandlock:  cfg.Without.Landlock,
		RefuseSetID: stage.SetIDRefusable(),
	}
	if sp.Env == nil {
		sp.Env = []string{}
	}
	if tmp := envValue(spec.Env, "TMPDIR"); tmp != "" && granted(tmp, spec.Writable) && !under("/tmp", append([]string{spec.Dir, prog}, append(spec.Writable, cfg.Readable...)...)...) {
		sp.Tmp = tmp // what it writes to /tmp is its own too
	}
	rules, err := cfg.ruleset(llc, abi, spec, prog)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", spec.Name, err)
	}
	defer rules.Close()
	return start(spec, sp, rules, userns, cfg.Without.PIDNamespace)
}

// program is the agent's program, found on its own PATH.
func program(spec Spec) (string, error) {
	name := spec.Argv[0]
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			name = filepath.Join(spec.Dir, name)
		}
		return name, nil
	}
	for _, dir := range filepath.SplitList(envValue(spec.Env, "PATH")) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("agent %s: command %s is not on its PATH (%s); give its full path, or add its directory to the agent's PATH", spec.Name, name, envValue(spec.Env, "PATH"))
}

func envValue(env []string, key string) string {
	v := ""
	for _, e := range env {
		if k, val, ok := strings.Cut(e, "="); ok && k == key {
			v = val // the last one is what a program reads
		}
	}
	return v
}

func granted(p string, paths []string) bool {
	for _, w := range paths {
		if sandbox.Within(sandbox.Real(p), sandbox.Real(w)) {
			return true
		}
	}
	return false
}

// under reports whether any of paths lies under dir.
func under(dir string, paths ...string) bool {
	for _, p := range paths {
		if sandbox.Within(p, dir) || sandbox.Within(sandbox.Real(p), dir) {
			return true
		}
	}
	return false
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// check refuses a grant that would reach a denied path: one that holds a
// denied path, or lies inside one. The one exception is the agent's own
// directory in the workspaces' (the denied path whose key is
// WorkspacesKey): its workspace, and its writable paths beside it.
func (cfg Config) check(spec Spec, prog string) error {
	own := cfg.ownDir(spec)
	type grant struct{ what, path string }
	grants := []grant{{"its workspace", spec.Dir}, {"its program", prog}}
	for _, w := range spec.Writable {
		grants = append(grants, grant{"writable path", w})
	}
	for _, r := range cfg.Readable {
		grants = append(grants, grant{"readable path", r})
	}
	for _, g := range grants {
		p := sandbox.Real(g.path)
		for _, d := range cfg.Deny {
			if d.Path == "" {
				continue
			}
			dp := sandbox.Real(d.Path)
			inOwn := own != "" && d.Key == WorkspacesKey && sandbox.Within(p, own)
			switch {
			case inOwn:
			case sandbox.Within(dp, p):
				return fmt.Errorf("agent %s: %s %s holds %s (%s), which an agent must not reach; name a narrower path", spec.Name, g.what, g.path, d.Key, d.Path)
			case sandbox.Within(p, dp):
				return fmt.Errorf("agent %s: %s %s is inside %s (%s), which an agent must not reach", spec.Name, g.what, g.path, d.Key, d.Path)
			}
		}
	}
	return nil
}

// ownDir is the agent's own directory in the workspaces' (the one its
// workspace lies in: its workspace, key, HOME and TMPDIR, as foreman up
// lays them out); "" when its workspace is not in it.
func (cfg Config) ownDir(spec Spec) string {
	for _, d := range cfg.Deny {
		if d.Key == WorkspacesKey && d.Path != "" {
			if rel, err := filepath.Rel(sandbox.Real(d.Path), sandbox.Real(spec.Dir)); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
				return filepath.Join(sandbox.Real(d.Path), strings.Split(rel, string(filepath.Separator))[0])
			}
		}
	}
	return ""
}

// WorkspacesKey names, in Config.Deny, the directory of the agents'
// workspaces: each agent reaches its own directory in it (the one its
// workspace lies in), never another's.
const WorkspacesKey = "agents.workspaces"

// ruleset is the agent's Landlock ruleset: the system and Readable to
// read and run, its workspace and writable paths to read and write, the
// devices, nothing else (the fresh /proc is added by the stage).
func (cfg Config) ruleset(llc landlock.Config, abi int, spec Spec, prog string) (*os.File, error) {
	if cfg.Without.Landlock {
		return os.Open(os.DevNull) // a placeholder at RulesetFD: the stage enforces none
	}
	sysDirs, sysFiles := cfg.systemPaths()
	var roDirs, roFiles, rwDirs, rwFiles []string
	readable := append([]string{prog}, cfg.Readable...)
	if own := cfg.ownDir(spec); own != "" {
		readable = append(readable, own) // its key, beside its workspace
	}
	for _, p := range readable {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			roDirs = append(roDirs, p)
		} else if err == nil {
			roFiles = append(roFiles, p)
		}
	}
	for _, p := range append([]string{spec.Dir}, spec.Writable...) {
		if isFile(p) {
			rwFiles = append(rwFiles, p)
		} else {
			rwDirs = append(rwDirs, p)
		}
	}
	rw := landlock.RWDirs(rwDirs...)
	if abi >= 2 {
		rw = rw.WithRefer()
	}
	rules := []landlock.Rule{
		landlock.RODirs(sysDirs...),
		landlock.ROFiles(sysFiles...),
		landlock.RODirs(roDirs...),
		landlock.ROFiles(roFiles...),
		landlock.RODirs("/sys").IgnoreIfMissing(),
		rw,
		landlock.RWFiles(rwFiles...),
		landlock.RWFiles(sandbox.Devices()...).WithIoctlDev().IgnoreIfMissing(),
	}
	fd, _, err := llc.NewRulesetFD(rules...)
	if err != nil {
		return nil, fmt.Errorf("landlock ruleset: %w", err)
	}
	if fd < 0 {
		return nil, errors.New("landlock ruleset: nothing to restrict (this kernel's Landlock handles no right)")
	}
	return os.NewFile(uintptr(fd), "landlock ruleset"), nil
}

// Prepare is cfg with what the system lets every agent read, outside
// Deny, found now, once for all its launches (each would look again).
func (cfg Config) Prepare() Config {
	dirs, files := sandbox.Readable(cfg.Deny)
	cfg.system = &system{deny: slices.Clone(cfg.Deny), dirs: dirs, files: files}
	return cfg
}

// systemPaths are the system's directories and files an agent reads:
// Prepare's, unless Deny changed since.
func (cfg Config) systemPaths() (dirs, files []string) {
	if s := cfg.system; s != nil && slices.Equal(s.deny, cfg.Deny) {
		return s.dirs, s.files
	}
	return sandbox.Readable(cfg.Deny)
}

// The uids given to agent names in this process: one per name, never two
// names one uid.
var uids struct {
	sync.Mutex
	byName map[string]int
	taken  map[int]bool
}

// uidOf is name's uid: the same for this process's life, the first free
// one from a hash of the name (so that, across foreman's restarts, an
// agent mostly gets back the uid its files have).
func uidOf(name string, base int) int {
	if base <= 0 {
		base = DefaultUIDBase
	}
	uids.Lock()
	defer uids.Unlock()
	if uids.byName == nil {
		uids.byName, uids.taken = map[string]int{}, map[int]bool{}
	}
	if u, ok := uids.byName[name]; ok {
		return u
	}
	for i := uint32(0); ; i++ {
		u := base + int((slot(name)+i)%65536)
		if !uids.taken[u] {
			uids.byName[name], uids.taken[u] = u, true
			return u
		}
	}
}

// slot is where name's uid is looked for first, past the base.
func slot(name string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return h.Sum32() % 65536
}

// own makes the agent's own directory (when its workspace is in the
// workspaces'), workspace and writable paths its uid's (all of each, when
// its top is not: made by foreman, or by this name's uid of an earlier
// life), and refuses a path the uid cannot reach for a parent it may not
// enter.
func own(spec Spec, ownDir string, uid int) error {
	paths := append([]string{spec.Dir}, spec.Writable...)
	if ownDir != "" {
		paths = append([]string{ownDir}, paths...)
	}
	for _, p := range paths {
		closed, err := closedDirs(filepath.Dir(p), uid)
		if err != nil {
			return fmt.Errorf("agent %s: %w", spec.Name, err)
		}
		if len(closed) > 0 {
			dir := closed[len(closed)-1] // the nearest
			return fmt.Errorf("agent %s: %s cannot reach %s: %s (mode %v) lets no other user enter it; chmod o+x %s (mode 0711 lists nothing to others), or put the agents' workspaces elsewhere", spec.Name, userName(uid), p, dir.path, dir.mode, dir.path)
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return fmt.Errorf("agent %s: %s: %w", spec.Name, p, err)
		}
		if int(st.Uid) == uid {
			written := spec.Written
			if p == ownDir {
				// What foreman wrote there since (its key again): the
				// files at the top, by the same rule.
				written = nil
				entries, _ := os.ReadDir(p)
				for _, e := range entries {
					if e.Type().IsRegular() {
						written = append(written, filepath.Join(sandbox.Real(p), e.Name()))
					}
				}
			}
			if err := ownWritten(p, written, uid); err != nil {
				return fmt.Errorf("agent %s: %w", spec.Name, err)
			}
			continue
		}
		err = filepath.WalkDir(p, func(path string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(path, uid, uid)
		})
		if err != nil {
			return fmt.Errorf("agent %s: making %s its uid's (%d): %w", spec.Name, p, uid, err)
		}
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			if err := os.Chmod(p, 0o700); err != nil {
				return fmt.Errorf("agent %s: %s: %w", spec.Name, p, err)
			}
		}
	}
	return nil
}

// Closed is the directories from dir up to / (the outermost first) that
// uid cannot enter: those that let no other user in, but one of uid's own
// that lets its owner in. uid -1 is any uid of an agent's, before it is
// known: one that owns none of them.
func Closed(dir string, uid int) ([]string, error) {
	closed, err := closedDirs(dir, uid)
	paths := make([]string, len(closed))
	for i, c := range closed {
		paths[i] = c.path
	}
	return paths, err
}

// closedDir is a directory Closed names, with the mode it found, for
// saying so.
type closedDir struct {
	path string
	mode os.FileMode
}

func closedDirs(dir string, uid int) ([]closedDir, error) {
	var closed []closedDir
	for d := dir; ; d = filepath.Dir(d) {
		var st unix.Stat_t
		if err := unix.Stat(d, &st); err != nil {
			return nil, &fs.PathError{Op: "stat", Path: d, Err: err}
		}
		if st.Mode&0o001 == 0 && !(uid >= 0 && int(st.Uid) == uid && st.Mode&0o100 != 0) {
			closed = append([]closedDir{{d, os.FileMode(st.Mode & 0o777)}}, closed...)
		}
		if d == "/" || d == "." {
			return closed, nil
		}
	}
}

// ownWritten makes what foreman wrote for the agent in dir, the agent's
// already, since its last start (spec.Written: its CLI's MCP config,
// 0600, which foreman up writes again at each of its starts, and the
// directories made for it) its uid's. Each is reached within dir, never
// through a link out of it, and only what is foreman's changes hands:
// never a file with another link (one the agent made to somebody else's
// file must not become its).
func ownWritten(dir string, written []string, uid int) error {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil // a file: its top was checked
	}
	defer r.Close()
	for _, w := range written {
		rel, err := filepath.Rel(sandbox.Real(dir), w)
		if err != nil || !filepath.IsLocal(rel) {
			continue // another of its paths'
		}
		fi, err := r.Lstat(rel)
		if err != nil {
			continue
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || int(st.Uid) != os.Geteuid() || !fi.IsDir() && st.Nlink > 1 {
			continue
		}
		if err := r.Lchown(rel, uid, uid); err != nil {
			return err
		}
	}
	return nil
}

func userName(uid int) string { return fmt.Sprintf("uid %d", uid) }

// start starts the stage in the agent's namespaces and hands it its spec;
// it returns once the agent's program runs, or why it did not.
func start(spec Spec, sp stage.Spec, rules *os.File, userns, sharedPID bool) (*Process, error) {
	data, err := json.Marshal(sp)
	if err != nil {
		return nil, err
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer specW.Close()
	repR, repW, err := os.Pipe()
	if err != nil {
		specR.Close()
		return nil, err
	}
	defer repR.Close()
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{stage.Marker}, Env: []string{},
		Stdout: spec.Stdout, Stderr: spec.Stderr, ExtraFiles: []*os.File{specR, repW, rules}}
	attr := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC, Pdeathsig: syscall.SIGKILL}
	if !sharedPID {
		attr.Cloneflags |= syscall.CLONE_NEWPID
	}
	if userns {
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
		attr.GidMappingsEnableSetgroups = false
		// As the sandbox's checks: the stage keeps what it needs to set
		// up (its mounts, dropping the rest) past its exec, and drops it
		// before the agent's.
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
	}
	cmd.SysProcAttr = attr
	err = cmd.Start()
	specR.Close()
	repW.Close()
	if err != nil {
		return nil, fmt.Errorf("agent %s: starting its box: %w", spec.Name, err)
	}
	_, werr := specW.Write(data)
	specW.Close()
	msg, _ := io.ReadAll(repR)
	if len(msg) > 0 || werr != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if len(msg) == 0 {
			msg = []byte(werr.Error())
		}
		return nil, fmt.Errorf("agent %s did not start: %s", spec.Name, msg)
	}
	return &Process{cmd: cmd, UID: sp.Uid}, nil
}
