//go:build linux

package agentbox

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/agentforeman/foreman/internal/host/sandbox"
)

// site is a foreman's directory as foreman up lays it out: the host's key,
// host.work, the journal, host.repo, and the agents' workspaces, each
// agent's workspace, HOME and TMPDIR in its own directory.
type site struct {
	t                        *testing.T
	base                     string
	key, work, journal, repo string
	agents                   string
	cfg                      Config
	scoped                   bool // this kernel's Landlock scopes signals (ABI 6)
	uid                      int  // the user the test runs as
	keySecret, environSecret string
}

func newSite(t *testing.T) *site {
	base := t.TempDir()
	// The agents' uids must reach their directories: every parent lets
	// others enter (and list nothing).
	for d := base; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		require.NoError(t, os.Chmod(d, 0o711))
	}
	s := &site{t: t, base: base, key: filepath.Join(base, "host", "host.json"), work: filepath.Join(base, "host", "work"),
		journal: filepath.Join(base, "journal"), repo: filepath.Join(base, "repo.git"), agents: filepath.Join(base, "agents"),
		uid: os.Getuid(), keySecret: "host-key-" + strconv.Itoa(os.Getpid()), environSecret: "b2-secret-" + strconv.Itoa(os.Getpid())}
	for _, d := range []string{s.work, s.journal, filepath.Join(s.repo, "refs", "heads")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.Mkdir(s.agents, 0o711))
	require.NoError(t, os.WriteFile(s.key, []byte(s.keySecret), 0o600))
	s.cfg = Config{Deny: []sandbox.Denied{{Key: "host.identity", Path: s.key}, {Key: "host.work", Path: s.work},
		{Key: "journal.path", Path: s.journal}, {Key: "host.repo", Path: s.repo}, {Key: WorkspacesKey, Path: s.agents}}}.Prepare()
	_, abi, err := sandbox.Landlock()
	if err != nil {
		t.Skipf("no Landlock here: %v", err)
	}
	s.scoped = abi >= 6
	return s
}

// spec is agent name's spec: sh running script in its workspace.
func (s *site) spec(name, script string, env ...string) (Spec, *bytes.Buffer) {
	dir := filepath.Join(s.agents, name)
	ws, home, tmp := filepath.Join(dir, "ws"), filepath.Join(dir, "home"), filepath.Join(dir, "tmp")
	for _, d := range []string{dir, ws} {
		require.NoError(s.t, os.MkdirAll(d, 0o755))
	}
	// Its key, as foreman up writes it beside its workspace.
	require.NoError(s.t, os.WriteFile(filepath.Join(dir, "identity.json"), []byte("key-of-"+name), 0o600))
	var out bytes.Buffer
	return Spec{Name: name, Dir: ws, Argv: []string{"sh", "-c", script},
		Env:    append([]string{"PATH=/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + tmp}, env...),
		Stdout: &out, Stderr: &out, Writable: []string{home, tmp}}, &out
}

// The attacks an agent makes on foreman, the host and another agent; each
// says ATTACK <name> when it worked.
const attacks = `
cat "$KEY" 2>/dev/null | grep -q "$KEYSECRET" && echo "ATTACK read-key"
(echo x > "$BWS/planted") 2>/dev/null && echo "ATTACK write-workspace"
(echo x > "$REPO/refs/heads/planted") 2>/dev/null && echo "ATTACK write-repo"
(echo x > "$JOURNAL/planted") 2>/dev/null && echo "ATTACK write-journal"
kill -0 "$FOREMAN" 2>/dev/null && echo "ATTACK signal-foreman"
cat "/proc/$BPID/environ" 2>/dev/null | tr '\0' '\n' | grep -q "$ENVSECRET" && echo "ATTACK read-environ"
kill -KILL "$BPID" 2>/dev/null && echo "ATTACK kill-agent"
cat "$BKEY" 2>/dev/null | grep -q key-of-b2 && echo "ATTACK read-agent-key"
echo x > own && echo "writes its own workspace"
grep -q key-of-b1 ../identity.json && echo "reads its own key"
echo x > "$HOME/own" && echo "writes its HOME"
`

// attack runs b2, a long-lived agent with a secret in its environment,
// then b1's attacks on it, foreman and the host, each confined as without
// says; it returns the attacks that worked, as b1 said and as the world
// shows them.
func (s *site) attack(without Without) (said, seen []string) {
	cfg := s.cfg
	cfg.Without = without
	bspec, bout := s.spec("b2", "echo ready; exec sleep 600", "SECRET="+s.environSecret)
	b, err := Launch(cfg, bspec)
	require.NoError(s.t, err)
	waited := false
	defer func() {
		if !waited {
			_ = b.Signal(syscall.SIGKILL)
			_ = b.Wait()
		}
	}()
	bpid := agentPID(s.t, b)
	aspec, aout := s.spec("b1", attacks, "KEY="+s.key, "KEYSECRET="+s.keySecret, "BWS="+bspec.Dir, "REPO="+s.repo,
		"JOURNAL="+s.journal, "BKEY="+filepath.Join(s.agents, "b2", "identity.json"), "FOREMAN="+strconv.Itoa(os.Getpid()), "BPID="+strconv.Itoa(bpid), "ENVSECRET="+s.environSecret)
	a, err := Launch(cfg, aspec)
	require.NoError(s.t, err)
	require.NoError(s.t, a.Wait(), aout.String())
	require.Contains(s.t, aout.String(), "writes its own workspace", "the control: %s", aout)
	require.Contains(s.t, aout.String(), "writes its HOME")
	require.Contains(s.t, aout.String(), "reads its own key")
	for _, line := range strings.Split(aout.String(), "\n") {
		if name, ok := strings.CutPrefix(line, "ATTACK "); ok {
			said = append(said, name)
		}
	}
	// What the world shows: the files planted, and how b2 ended (asked
	// to stop now, it says SIGTERM, passed on by its stage; killed
	// before, SIGKILL).
	for name, path := range map[string]string{"write-workspace": filepath.Join(bspec.Dir, "planted"),
		"write-repo": filepath.Join(s.repo, "refs", "heads", "planted"), "write-journal": filepath.Join(s.journal, "planted")} {
		if _, err := os.Stat(path); err == nil {
			seen = append(seen, name)
			require.NoError(s.t, os.Remove(path))
		}
	}
	require.NoError(s.t, b.Signal(syscall.SIGTERM))
	err = b.Wait()
	waited = true
	var exit *exec.ExitError
	require.True(s.t, errors.As(err, &exit), "b2 ended: %v (%s)", err, bout)
	switch exit.ExitCode() {
	case 128 + int(syscall.SIGKILL):
		seen = append(seen, "kill-agent")
	case 128 + int(syscall.SIGTERM):
	default:
		s.t.Fatalf("b2 ended with %v: %s", err, bout)
	}
	return said, seen
}

// agentPID is the host PID of agent p's program: its stage's child.
func agentPID(t *testing.T, p *Process) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid()) + "/task/" + strconv.Itoa(p.Pid()) + "/children")
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	require.NoError(t, err, "one child: %q", data)
	return pid
}

// Each defence alone stops its attacks, and with all of them off every
// attack works: an agent reads the host's key, writes another agent's
// workspace, host.repo and the journal, signals foreman, reads another
// agent's environment and kills it. Where foreman is root, each agent has
// a uid of its own; otherwise (the test runs itself again as nobody) a
// user namespace, and Landlock and the PID namespace carry it alone.
func TestAnAgentReachesNothingButItsOwn(t *testing.T) {
	if os.Getuid() == 0 && os.Getenv(unprivilegedEnv) == "" {
		t.Run("as nobody", asNobody)
	}
	fsAttacks := []string{"read-key", "read-agent-key", "write-workspace", "write-repo", "write-journal"}
	procAttacks := []string{"signal-foreman", "read-environ", "kill-agent"}
	root := os.Getuid() == 0
	modes := []struct {
		name    string
		without Without
	}{
		{"all defences", Without{}},
		{"none", Without{Landlock: true, OwnUID: true, PIDNamespace: true}},
		{"Landlock alone", Without{OwnUID: true, PIDNamespace: true}},
		{"the PID namespace alone", Without{Landlock: true, OwnUID: true}},
	}
	if root {
		modes = append(modes, struct {
			name    string
			without Without
		}{"its own uid alone", Without{Landlock: true, PIDNamespace: true}})
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			s := newSite(t) // each its own: a mode without its own uid cannot write what one with it left
			said, seen := s.attack(m.without)
			t.Logf("b1 says it could: %v; the world shows: %v", said, seen)
			l, u, p := !m.without.Landlock, root && !m.without.OwnUID, !m.without.PIDNamespace
			var want []string
			if !l && !u {
				want = append(want, fsAttacks...)
			}
			for _, a := range procAttacks {
				scopedOut := l && (a == "read-environ" || s.scoped) // Landlock's domains: no ptrace out; signals too from ABI 6
				// Two agents in user namespaces of their own (foreman
				// not root) cannot read each other's memory either.
				usernsOut := !root && a == "read-environ"
				if !p && !u && !scopedOut && !usernsOut {
					want = append(want, a)
				}
			}
			assert.ElementsMatch(t, want, said, "what b1 says it did")
			var wantSeen []string
			for _, a := range want {
				if a != "read-key" && a != "read-agent-key" && a != "signal-foreman" && a != "read-environ" {
					wantSeen = append(wantSeen, a)
				}
			}
			assert.ElementsMatch(t, wantSeen, seen, "what the world shows")
		})
	}
}

const unprivilegedEnv = "FOREMANTEST_AGENTBOX_UNPRIVILEGED"

// asNobody runs this test again as nobody, where agents get a user
// namespace instead of a uid of their own.
func asNobody(t *testing.T) {
	dir, err := os.MkdirTemp("", "agentbox-unprivileged-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	bin := filepath.Join(dir, "agentbox.test")
	data, err := os.ReadFile(os.Args[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bin, data, 0o755))
	tmp := filepath.Join(dir, "tmp")
	require.NoError(t, os.Mkdir(tmp, 0o700))
	require.NoError(t, os.Chown(tmp, sandbox.Nobody, sandbox.Nobody))
	// All defences, and none: what a user namespace and Landlock stop
	// where each agent has no uid of its own (the modes between are the
	// root run's).
	cmd := exec.Command(bin, "-test.run=^TestAnAgentReachesNothingButItsOwn$/^(all_defences|none)$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = []string{unprivilegedEnv + "=1", "PATH=/usr/bin:/bin", "TMPDIR=" + tmp, "HOME=/nonexistent"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: sandbox.Nobody, Gid: sandbox.Nobody}}
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "--- SKIP: TestAnAgentReachesNothingButItsOwn") {
		t.Skipf("as nobody: %s", out)
	}
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "--- PASS: TestAnAgentReachesNothingButItsOwn")
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "could") || strings.Contains(line, "--- ") {
			t.Log("as nobody: " + strings.TrimSpace(line))
		}
	}
}

// A grant that would reach what agents must not is refused before
// anything starts (a writable path made), naming the path and the key: a
// writable path holding the host's key, a readable one inside host.work,
// a writable path in another agent's directory or, through a link, in the
// journal, a workspace inside the journal.
func TestAGrantThatReachesADeniedPathIsRefused(t *testing.T) {
	s := newSite(t)
	for want, change := range map[string]func(*Spec, *Config){
		"writable path " + s.base + " holds host.identity (" + s.key + "), which an agent must not reach; name a narrower path": func(sp *Spec, _ *Config) {
			sp.Writable = append(sp.Writable, s.base)
		},
		"readable path " + filepath.Join(s.work, "x") + " is inside host.work (" + s.work + "), which an agent must not reach": func(_ *Spec, c *Config) {
			c.Readable = []string{filepath.Join(s.work, "x")}
		},
		"writable path " + filepath.Join(s.agents, "b2", "home") + " is inside agents.workspaces (" + s.agents + ")": func(sp *Spec, _ *Config) {
			sp.Writable = append(sp.Writable, filepath.Join(s.agents, "b2", "home"))
		},
		"its workspace " + filepath.Join(s.journal, "ws") + " is inside journal.path": func(sp *Spec, _ *Config) {
			sp.Dir = filepath.Join(s.journal, "ws")
		},
		"writable path " + filepath.Join(s.agents, "b1", "link", "made") + " is inside journal.path (" + s.journal + ")": func(sp *Spec, _ *Config) {
			require.NoError(t, os.Symlink(s.journal, filepath.Join(s.agents, "b1", "link")))
			sp.Writable = append(sp.Writable, filepath.Join(s.agents, "b1", "link", "made"))
		},
	} {
		sp, _ := s.spec("b1", "echo started")
		cfg := s.cfg
		change(&sp, &cfg)
		_, err := Launch(cfg, sp)
		require.Error(t, err, want)
		assert.Contains(t, err.Error(), want)
	}
	// Refused before a writable path is made: nothing in another agent's
	// directory, nothing through a link into the journal.
	assert.NoDirExists(t, filepath.Join(s.agents, "b2"))
	assert.NoDirExists(t, filepath.Join(s.journal, "made"))
	sp, _ := s.spec("b1", "true")
	sp.Argv = []string{"no-such-agent-cli"}
	_, err := Launch(s.cfg, sp)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "agent b1: command no-such-agent-cli is not on its PATH (/usr/bin:/bin)")
}

const foremanEnv = "FOREMANTEST_AGENTBOX_FOREMAN"

// Not a test: a foreman that starts one agent, says the agent's stage's
// and program's pids, and waits to be killed.
func TestHelperForeman(t *testing.T) {
	if os.Getenv(foremanEnv) == "" {
		t.Skip("a helper: TestAnAgentDiesWithForeman runs it")
	}
	s := newSite(t)
	sp, _ := s.spec("b1", "exec sleep 600")
	p, err := Launch(Config{Deny: s.cfg.Deny, Without: Without{PIDNamespace: os.Getenv(foremanEnv) == "shared"}}, sp)
	require.NoError(t, err)
	os.Stdout.WriteString("pids " + strconv.Itoa(p.Pid()) + " " + strconv.Itoa(agentPID(t, p)) + "\n")
	_, _ = os.Stdin.Read(make([]byte, 1)) // until killed
}

// When foreman dies (killed outright: no chance to stop anything), its
// agents die too: the stage gets SIGKILL, and the kernel ends its PID
// namespace. Without the namespace the agent outlives foreman.
func TestAnAgentDiesWithForeman(t *testing.T) {
	for _, mode := range []string{"own", "shared"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperForeman$", "-test.count=1")
		cmd.Env = append(os.Environ(), foremanEnv+"="+mode)
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		defer stdin.Close()
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		var line string
		for lines := bufio.NewScanner(out); line == "" && lines.Scan(); {
			if strings.HasPrefix(lines.Text(), "pids ") {
				line = lines.Text() // past the test runner's own lines
			}
		}
		require.NotEmpty(t, line, "the helper says its agent's pids")
		fields := strings.Fields(line)
		stagePID, _ := strconv.Atoi(fields[1])
		agent, _ := strconv.Atoi(fields[2])
		stageFD, err := unix.PidfdOpen(stagePID, 0)
		require.NoError(t, err)
		agentFD, err := unix.PidfdOpen(agent, 0)
		require.NoError(t, err)
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()
		exited(t, stageFD, "the stage dies with foreman (Pdeathsig)")
		if mode == "shared" {
			assert.False(t, ended(agentFD), "without a PID namespace the agent outlives foreman")
			require.NoError(t, unix.Kill(agent, unix.SIGKILL))
		}
		exited(t, agentFD, "the agent is gone")
		unix.Close(stageFD)
		unix.Close(agentFD)
	}
}

// exited waits for the process of pidfd fd to end (a minute at most: the
// kernel's doing, not a race with the machine's load).
func exited(t *testing.T, fd int, what string) {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 60_000)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		require.NoError(t, err)
		require.Equal(t, 1, n, what)
		return
	}
}

// ended reports whether the process of pidfd fd has ended, now.
func ended(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, _ := unix.Poll(fds, 0)
	return n == 1
}

// A supervisor's SIGTERM reaches the agent, which may stop as it likes
// (here: says so and exits 7), rather than ending its box outright.
func TestASupervisorsSignalReachesTheAgent(t *testing.T) {
	s := newSite(t)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	sp, _ := s.spec("b1", `trap 'echo heard TERM; exit 7' TERM; echo ready; sleep 600 & wait`)
	sp.Stdout = w
	p, err := Launch(s.cfg, sp)
	w.Close()
	require.NoError(t, err)
	lines := bufio.NewScanner(r)
	require.True(t, lines.Scan())
	require.Equal(t, "ready", lines.Text(), "its trap is set")
	require.NoError(t, p.Signal(syscall.SIGTERM))
	err = p.Wait()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v", err)
	assert.Equal(t, 7, exit.ExitCode(), "the agent's own exit")
	require.True(t, lines.Scan())
	assert.Equal(t, "heard TERM", lines.Text())
}

// Each agent name has a uid of its own, the same at every start; two names
// whose hashes meet get two uids all the same.
func TestEachAgentHasAUidOfItsOwn(t *testing.T) {
	const base = 2_000_000_000
	first := map[uint32]string{}
	var a, b string
	for i := 0; a == ""; i++ {
		name := "meet" + strconv.Itoa(i)
		if other, ok := first[slot(name)]; ok {
			a, b = other, name
		}
		first[slot(name)] = name
	}
	ua, ub := uidOf(a, base), uidOf(b, base)
	assert.NotEqual(t, ua, ub, "%s and %s meet at %d", a, b, slot(a))
	for _, u := range []int{ua, ub} {
		assert.GreaterOrEqual(t, u, base)
		assert.Less(t, u, base+65536)
	}
	assert.Equal(t, ua, uidOf(a, base), "the same at every start")
	assert.Equal(t, ub, uidOf(b, base))
}

// What foreman up writes again at each start in an agent's workspace and
// HOME (its CLI's MCP config, 0600, and a directory made for it), named
// in Written, is the agent's to read when it starts again as its own uid;
// the rest of its directories is not walked again (a big ~/.cache would
// be at every start): a file of foreman's there, not named, stays
// foreman's.
func TestWhatForemanWritesAgainIsTheAgents(t *testing.T) {
	if os.Geteuid() != 0 || !sandbox.HasCap(unix.CAP_SYS_ADMIN) {
		t.Skip("an agent has a uid of its own where foreman is root")
	}
	s := newSite(t)
	spec, out := s.spec("b1", `[ -e ./.mcp.json ] || exit 0; cat ./.mcp.json "$HOME/.gemini/settings.json"`)
	run := func() *Process {
		p, err := Launch(s.cfg, spec)
		require.NoError(t, err)
		require.NoError(t, p.Wait(), "%s", out)
		return p
	}
	uid := run().UID // its workspace and HOME are its own since
	home := filepath.Join(filepath.Dir(spec.Dir), "home")
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".gemini"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(spec.Dir, ".mcp.json"), []byte("workspace's\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte("home's\n"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".cache"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".cache", "foremans"), nil, 0o600))
	spec.Written = []string{filepath.Join(spec.Dir, ".mcp.json"), filepath.Join(home, ".gemini"), filepath.Join(home, ".gemini", "settings.json")}
	out.Reset()
	run()
	assert.Equal(t, "workspace's\nhome's\n", out.String())
	for path, owner := range map[string]int{filepath.Join(home, ".gemini"): uid, filepath.Join(home, ".cache", "foremans"): os.Geteuid()} {
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(path, &st))
		assert.Equal(t, owner, int(st.Uid), path)
	}
}

// Between two starts an agent controls its workspace and HOME: a link it
// leaves where foreman wrote (its clone's .git to a directory of the
// system's, its HOME's .claude or .gemini to one of foreman's), a hard link
// to a file of root's, a file of another user's: none of what they lead
// to becomes the agent's at the next start.
func TestWhatTheAgentLinkedDoesNotBecomeItsOwn(t *testing.T) {
	if os.Geteuid() != 0 || !sandbox.HasCap(unix.CAP_SYS_ADMIN) {
		t.Skip("an agent has a uid of its own where foreman is root")
	}
	s := newSite(t)
	spec, out := s.spec("b1", "true")
	run := func() *Process {
		p, err := Launch(s.cfg, spec)
		require.NoError(t, err)
		require.NoError(t, p.Wait(), "%s", out)
		return p
	}
	uid := run().UID
	ws, home := spec.Dir, filepath.Join(filepath.Dir(spec.Dir), "home")

	// What the system holds (root's), outside every agent's directory.
	system := filepath.Join(s.base, "system")
	for _, f := range []string{"templates/info/exclude", "claude/settings.json", "gemini/settings.json", "shadow", "passwd"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(system, f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(system, f), nil, 0o644))
	}
	// What the agent leaves, as its uid.
	for link, to := range map[string]string{filepath.Join(ws, ".git"): filepath.Join(system, "templates"),
		filepath.Join(home, ".claude"): filepath.Join(system, "claude"), filepath.Join(home, ".gemini"): filepath.Join(system, "gemini")} {
		require.NoError(t, os.Symlink(to, link))
		require.NoError(t, os.Lchown(link, uid, uid))
	}
	require.NoError(t, os.Link(filepath.Join(system, "shadow"), filepath.Join(ws, ".mcp.json")))
	// Its own directory (its key's) is not the agent's to write, but
	// what is there changes hands by the same rule.
	require.NoError(t, os.Link(filepath.Join(system, "passwd"), filepath.Join(filepath.Dir(ws), "notes")))
	key := filepath.Join(filepath.Dir(ws), "identity.json")
	require.NoError(t, os.Remove(key))
	require.NoError(t, os.WriteFile(key, []byte("key-of-b1"), 0o600)) // foreman's again, as at each start
	// Another user's file, not foreman's.
	other := filepath.Join(ws, "others.json")
	require.NoError(t, os.WriteFile(other, nil, 0o600))
	require.NoError(t, os.Chown(other, 4242, 4242))

	spec.Written = []string{filepath.Join(ws, ".git"), filepath.Join(ws, ".git", "info"), filepath.Join(ws, ".git", "info", "exclude"),
		filepath.Join(ws, ".mcp.json"), other,
		filepath.Join(home, ".claude"), filepath.Join(home, ".claude", "settings.json"),
		filepath.Join(home, ".gemini"), filepath.Join(home, ".gemini", "settings.json")}
	run()
	owners := map[string]int{other: 4242, key: uid}
	require.NoError(t, filepath.WalkDir(system, func(path string, _ fs.DirEntry, err error) error {
		owners[path] = os.Geteuid()
		return err
	}))
	for path, owner := range owners {
		var st unix.Stat_t
		require.NoError(t, unix.Lstat(path, &st))
		assert.Equal(t, owner, int(st.Uid), "%s changed hands", path)
	}
}

// A directory that lets no other user in closes the way to what is
// below it, to every agent's uid but the one that owns it.
func TestClosedDirectories(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open")
	shut := filepath.Join(open, "shut")
	require.NoError(t, os.MkdirAll(shut, 0o700))
	require.NoError(t, os.Chmod(open, 0o711))
	below := filepath.Join(shut, "below")
	require.NoError(t, os.Mkdir(below, 0o711))

	closed, err := Closed(below, -1)
	require.NoError(t, err)
	assert.Contains(t, closed, shut)
	assert.NotContains(t, closed, open)
	assert.NotContains(t, closed, below)
	assert.Equal(t, shut, closed[len(closed)-1], "the nearest last")
	closed, err = Closed(below, os.Getuid())
	require.NoError(t, err)
	assert.NotContains(t, closed, shut, "its owner enters it")

	_, err = Closed(filepath.Join(below, "gone"), -1)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// A workspace an agent's uid could not reach is refused before anything
// changes hands, naming the directory in the way with the mode it has.
func TestAWorkspaceBehindAClosedDirectoryIsRefused(t *testing.T) {
	shut := filepath.Join(t.TempDir(), "shut")
	require.NoError(t, os.Mkdir(shut, 0o750))
	ws := filepath.Join(shut, "ws")
	require.NoError(t, os.Mkdir(ws, 0o700))
	uid := DefaultUIDBase + 77
	err := own(Spec{Name: "ada", Dir: ws}, "", uid)
	require.Error(t, err)
	assert.Equal(t, "agent ada: uid "+strconv.Itoa(uid)+" cannot reach "+ws+": "+shut+" (mode -rwxr-x---) lets no other user enter it; chmod o+x "+shut+" (mode 0711 lists nothing to others), or put the agents' workspaces elsewhere", err.Error())
}

// Prepare finds what the system lets agents read once, for all their
// launches, which use what it found; a Deny changed since is looked at
// again.
func TestPrepareFindsTheSystemOnce(t *testing.T) {
	s := newSite(t)
	dirs, files := s.cfg.systemPaths()
	wantDirs, wantFiles := sandbox.Readable(s.cfg.Deny)
	assert.Equal(t, wantDirs, dirs)
	assert.Equal(t, wantFiles, files)

	// A directory only what Prepare found grants: each launch reads it,
	// as none would that looked at the system again.
	once := filepath.Join(s.base, "found-once")
	require.NoError(t, os.Mkdir(once, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(once, "file"), []byte("found once\n"), 0o644))
	s.cfg.system.dirs = append(slices.Clone(s.cfg.system.dirs), once)
	spec, out := s.spec("b1", `cat "$ONCE/file"`, "ONCE="+once)
	for range 2 {
		out.Reset()
		p, err := Launch(s.cfg, spec)
		require.NoError(t, err)
		require.NoError(t, p.Wait(), "%s", out)
		assert.Equal(t, "found once\n", out.String())
	}

	cfg := s.cfg
	cfg.Deny = append(slices.Clone(cfg.Deny), sandbox.Denied{Key: "journal.path", Path: "/usr/share/journal"})
	dirs, _ = cfg.systemPaths()
	assert.NotContains(t, dirs, once, "another Deny: looked at again")
}
