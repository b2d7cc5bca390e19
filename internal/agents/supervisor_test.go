package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/otlp"
	"github.com/agentforeman/foreman/protocol"
)

func testConfig(t *testing.T) *config.Config {
	dir := t.TempDir()
	return &config.Config{File: filepath.Join(dir, "foreman.yaml"), Journal: filepath.Join(dir, ".foreman", "journal"),
		Server: config.Server{URL: "ws://127.0.0.1:1"}, Host: config.Host{Repo: gitRepo(t), Target: "main"}}
}

func sh(name, script string) config.Agent {
	return config.Agent{Name: name, Role: "builder", Command: []string{"sh", "-c", script}, Env: map[string]string{"OWN": "yes"}}
}

func running(t *testing.T, s *Supervisor) (context.CancelFunc, chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return cancel, done
}

func waitFor(t *testing.T, s *Supervisor, name string, ok func(Status) bool) Status {
	t.Helper()
	var last Status
	require.Eventually(t, func() bool {
		for _, st := range s.Status() {
			if st.Name == name {
				last = st
				return ok(st)
			}
		}
		return false
	}, 60*time.Second, 10*time.Millisecond, "agent %s: %+v", name, last)
	return last
}

// An agent starts in its clone with its own HOME, TMPDIR, key, the room
// and its env:, its output in its log; the MCP config is written where it
// works; a command not on PATH is refused before anything is made.
func TestAgentStartsInItsWorkspace(t *testing.T) {
	c := testConfig(t)
	_, err := New(context.Background(), Options{Config: c, Agents: []config.Agent{{Name: "x", Role: "builder", Command: []string{"no-such-agent-cli"}}}})
	require.Error(t, err)
	assert.Equal(t, "agents[0].command: no-such-agent-cli: no such program on PATH (executable file not found in $PATH); install it, or give its absolute path", err.Error())
	assert.NoDirExists(t, Root(c))

	s, err := New(context.Background(), Options{Config: c, Program: "/bin/foreman", Log: zerolog.Nop(),
		Agents: []config.Agent{sh("b1", `pwd; echo "$HOME $TMPDIR $FOREMAN_IDENTITY $FOREMAN_SERVER_URL $OWN"; exec sleep 1000`)}})
	require.NoError(t, err)
	w := s.Workspace("b1")
	assert.Equal(t, filepath.Join(filepath.Dir(c.Journal), "agents", "b1"), w.Dir, "beside the journal")
	var mcp struct {
		Servers map[string]struct {
			Command string
			Args    []string
		} `json:"mcpServers"`
	}
	b, err := os.ReadFile(filepath.Join(w.Work, ".mcp.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &mcp))
	assert.Equal(t, "/bin/foreman", mcp.Servers["foreman"].Command)
	assert.Equal(t, []string{"mcp", "--identity", w.Key, "--name", "b1", "--url", "ws://127.0.0.1:1", c.File}, mcp.Servers["foreman"].Args)
	// Codex's and gemini-cli's too, approved where each looks (mcpconfig),
	// and none of them ever committed with the work.
	assert.FileExists(t, filepath.Join(w.Home, ".codex", "config.toml"))
	assert.FileExists(t, filepath.Join(w.Work, ".gemini", "settings.json"))
	exclude, err := os.ReadFile(filepath.Join(w.Work, ".git", "info", "exclude"))
	require.NoError(t, err)
	assert.Contains(t, string(exclude), "/.mcp.json")
	assert.Contains(t, string(exclude), "/.gemini/settings.json")

	running(t, s)
	st := waitFor(t, s, "b1", func(st Status) bool { return st.State == Running })
	assert.NotZero(t, st.Pid)
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(w.Log)
		return strings.Contains(string(b), "yes\n")
	}, 30*time.Second, 10*time.Millisecond)
	log, _ := os.ReadFile(w.Log)
	assert.Contains(t, string(log), w.Work+"\n"+w.Home+" "+w.Tmp+" "+w.Key+" ws://127.0.0.1:1 yes\n")
}

// A process killed is started again in the same workspace, its files
// there; stopping up stops every process of the agent's group, even one
// that ignores SIGTERM, after the grace.
func TestKilledAgentRestartsAndStopKillsTheGroup(t *testing.T) {
	c := testConfig(t)
	s, err := New(context.Background(), Options{Config: c, Log: zerolog.Nop(), Grace: 200 * time.Millisecond,
		Rules:  Rules{Backoff: 10 * time.Millisecond, MaxBackoff: time.Second, FastExit: time.Millisecond, FastExits: 3},
		Agents: []config.Agent{sh("b1", `echo started >> starts; echo $$ > pid; trap '' TERM; sleep 1000 & echo $! >> children; wait`)}})
	require.NoError(t, err)
	w := s.Workspace("b1")
	cancel, done := running(t, s)
	first := waitFor(t, s, "b1", func(st Status) bool { return st.State == Running })
	// Its child's pid written, not only the file made: sh opens it first.
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(w.Work, "children"))
		return len(strings.Fields(string(b))) == 1
	}, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, syscall.Kill(first.Pid, syscall.SIGKILL))
	second := waitFor(t, s, "b1", func(st Status) bool { return st.State == Running && st.Restarts == 1 })
	assert.NotEqual(t, first.Pid, second.Pid)
	assert.Equal(t, "signal: killed", second.LastExit)
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(w.Work, "children"))
		return len(strings.Fields(string(b))) == 2
	}, 30*time.Second, 10*time.Millisecond, "the same workspace")
	b, err := os.ReadFile(filepath.Join(w.Work, "starts"))
	require.NoError(t, err)
	assert.Equal(t, "started\nstarted\n", string(b))
	b, err = os.ReadFile(filepath.Join(w.Work, "children"))
	require.NoError(t, err)

	cancel()
	<-done
	st := s.Status()[0]
	assert.Equal(t, Stopped, st.State)
	assert.Equal(t, "foreman up is stopping", st.Reason)
	assert.Eventually(t, func() bool { return !alive(second.Pid) }, 10*time.Second, 5*time.Millisecond, "the agent is gone")
	for _, child := range strings.Fields(string(b)) {
		var pid int
		_, err := fmt.Sscan(child, &pid)
		require.NoError(t, err)
		// SIGKILL is sent by then; the kernel ends the process a moment later.
		assert.Eventually(t, func() bool { return !alive(pid) }, 10*time.Second, 5*time.Millisecond,
			"and each child it left, even the one that outlived a SIGKILL of its parent")
	}
}

// An agent whose command exits at once is stopped for good after a few
// tries, with the reason in its status.
func TestAgentThatExitsAtOnceIsStopped(t *testing.T) {
	c := testConfig(t)
	s, err := New(context.Background(), Options{Config: c, Log: zerolog.Nop(),
		Rules:  Rules{Backoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond, FastExit: time.Minute, FastExits: 3},
		Agents: []config.Agent{sh("b1", `echo broken; exit 3`)}})
	require.NoError(t, err)
	running(t, s)
	st := waitFor(t, s, "b1", func(st Status) bool { return st.State == Stopped })
	assert.Equal(t, 2, st.Restarts)
	assert.Contains(t, st.Reason, "exited 3 times in a row within 1m0s of starting (last: exit status 3)")
	b, _ := os.ReadFile(st.Log)
	assert.Equal(t, 3, strings.Count(string(b), "broken\n"))
}

// foreman's TIMEOUT of an agent stops its process for good, and COMPLETE
// stops the rest.
func TestTimeoutAndCompleteStopAgents(t *testing.T) {
	c := testConfig(t)
	var mu sync.Mutex
	var revoked []string
	s, err := New(context.Background(), Options{Config: c, Log: zerolog.Nop(),
		Agents: []config.Agent{sh("b1", `exec sleep 1000`), sh("b2", `exec sleep 1000`)},
		Revoke: func(id string) { mu.Lock(); revoked = append(revoked, id); mu.Unlock() }})
	require.NoError(t, err)
	running(t, s)
	waitFor(t, s, "b2", func(st Status) bool { return st.State == Running })
	b1 := waitFor(t, s, "b1", func(st Status) bool { return st.State == Running })
	s.Observe(nil, []coordinator.Reply{{Reply: protocol.Timeout("api", s.Workspace("b1").ID)}})
	st := waitFor(t, s, "b1", func(st Status) bool { return st.State == Stopped })
	assert.Equal(t, "foreman timed it out on api (TIMEOUT api)", st.Reason)
	mu.Lock()
	assert.Equal(t, []string{s.Workspace("b1").ID}, revoked, "its push token ends with it")
	mu.Unlock()
	assert.Eventually(t, func() bool { return !alive(b1.Pid) }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, Running, s.Status()[1].State)
	s.Observe(nil, []coordinator.Reply{{Reply: protocol.Complete("shop")}})
	st = waitFor(t, s, "b2", func(st Status) bool { return st.State == Stopped })
	assert.Equal(t, "the build is COMPLETE", st.Reason)
}

// alive reports whether pid runs (a zombie nobody reaped does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// fakeProcess is a process of the fake Launcher: it ends when signalled.
type fakeProcess struct {
	pid  int
	sigs chan os.Signal
}

func (p *fakeProcess) Pid() int                 { return p.pid }
func (p *fakeProcess) Signal(s os.Signal) error { p.sigs <- s; return nil }
func (p *fakeProcess) Wait() error              { return fmt.Errorf("signal: %v", <-p.sigs) }

// The Launcher is given what a confining one needs: the agent's clone to
// start in, its whole environment, its output, and the paths it may write
// (its workspace, HOME and TMPDIR) and what foreman wrote there; stopping
// up signals each process.
func TestLauncherIsGivenTheSpec(t *testing.T) {
	c := testConfig(t)
	secret := []byte("a secret of foreman's, 16 bytes or more")
	specs := make(chan LaunchSpec, 4)
	s, err := New(context.Background(), Options{Config: c, Log: zerolog.Nop(), Secret: secret, Endpoint: "http://127.0.0.1:9191",
		Push: func(id string) ([]string, error) { return []string{"FOREMAN_PUSH_TOKEN=for-" + id}, nil },
		Launch: func(spec LaunchSpec) (Process, error) {
			specs <- spec
			return &fakeProcess{pid: 7, sigs: make(chan os.Signal, 2)}, nil
		},
		Agents: []config.Agent{sh("b1", "true")}})
	require.NoError(t, err)
	cancel, done := running(t, s)
	spec := <-specs
	w := s.Workspace("b1")
	assert.Equal(t, "b1", spec.Name)
	assert.Equal(t, w.Work, spec.Dir)
	assert.Equal(t, []string{"sh", "-c", "true"}, spec.Argv)
	assert.Equal(t, []string{w.Home, w.Tmp}, spec.Writable, "its directory (its key, its log) is not its to write")
	work, err := filepath.EvalSymlinks(w.Work)
	require.NoError(t, err)
	assert.Contains(t, spec.Written, filepath.Join(work, ".mcp.json"), "its MCP config: its uid's, when it has one")
	assert.Subset(t, spec.Env, []string{"HOME=" + w.Home, "TMPDIR=" + w.Tmp, "FOREMAN_IDENTITY=" + w.Key,
		"FOREMAN_SERVER_URL=ws://127.0.0.1:1", "FOREMAN_CONFIG=" + c.File, "OWN=yes"})
	assert.Subset(t, spec.Env, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:9191", "OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer " + otlp.Token(secret, w.ID), "FOREMAN_PUSH_TOKEN=for-" + w.ID},
		"its exporter's and its push's")
	waitFor(t, s, "b1", func(st Status) bool { return st.State == Running && st.Pid == 7 })
	cancel()
	<-done
	st := s.Status()[0]
	assert.Equal(t, Stopped, st.State)
	assert.Equal(t, "signal: terminated", st.LastExit)
}

// What an agent is granted, its exporter's token (from the secret's
// bytes) and its push's, is made once, at New, for all its starts: a
// restart neither makes its token again nor asks for another push token.
func TestWhatIsGrantedIsMadeOnceForAllStarts(t *testing.T) {
	c := testConfig(t)
	secret := []byte("a secret of foreman's, 16 bytes or more")
	var pushes atomic.Int32
	specs, procs := make(chan LaunchSpec, 4), make(chan *fakeProcess, 4)
	s, err := New(context.Background(), Options{Config: c, Log: zerolog.Nop(), Secret: secret, Endpoint: "http://127.0.0.1:9191",
		Rules: Rules{Backoff: time.Millisecond, MaxBackoff: time.Millisecond, FastExit: time.Nanosecond, FastExits: 10},
		Push: func(id string) ([]string, error) {
			return []string{fmt.Sprintf("FOREMAN_PUSH_TOKEN=for-%s-%d", id, pushes.Add(1))}, nil
		},
		Launch: func(spec LaunchSpec) (Process, error) {
			p := &fakeProcess{pid: 7, sigs: make(chan os.Signal, 2)}
			specs <- spec
			procs <- p
			return p, nil
		},
		Agents: []config.Agent{sh("b1", "true")}})
	require.NoError(t, err)
	id := s.Workspace("b1").ID
	granted := append(ExporterEnv("http://127.0.0.1:9191", secret, id), "FOREMAN_PUSH_TOKEN=for-"+id+"-1")
	// Were the token made again at a start, it would be made from these.
	clear(secret)
	running(t, s)
	for start := range 3 {
		spec := <-specs
		for _, kv := range granted {
			k, _, _ := strings.Cut(kv, "=")
			assert.Equal(t, []string{kv}, setting(spec.Env, k), "start %d", start+1)
		}
		if start < 2 {
			(<-procs).sigs <- syscall.SIGKILL // it crashed: started again
		}
	}
	assert.EqualValues(t, 1, pushes.Load(), "one push token, for all its starts")
}

// setting is every k= in env.
func setting(env []string, k string) []string {
	var out []string
	for _, kv := range env {
		if strings.HasPrefix(kv, k+"=") {
			out = append(out, kv)
		}
	}
	return out
}
