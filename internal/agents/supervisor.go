package agents

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/paste"
)

// Options are what the supervisor is given.
type Options struct {
	// Config is the build's: the room (server.url as up serves it), the
	// file, host.repo and host.target, telemetry, the journal beside which
	// the workspaces are.
	Config *config.Config
	Agents []config.Agent
	// Root holds the workspaces. Default: agents/ beside the journal
	// (.foreman/agents), or .foreman/agents beside the config without one.
	Root    string
	Program string   // foreman, for the MCP config (default: paste.Program)
	Launch  Launcher // default: Exec
	// WriteMCP writes foreman's MCP server where the agent's CLI reads it
	// in its workspace and HOME. Default: WriteMCP (Claude Code's,
	// Codex's and gemini-cli's, each approved there); it returns the
	// paths it wrote (LaunchSpec.Written).
	WriteMCP func(w Workspace, mcpCommand []string) ([]string, error)
	// Secret is telemetry.secret's bytes, loaded once by the caller, who
	// serves the OTLP receiver at Endpoint with the same (a URL this
	// machine can dial): with both, each agent's process is given its
	// exporter's environment (ExporterEnv), made once, at New.
	Secret   []byte
	Endpoint string
	// Push, if set, grants an agent (by its sender id) its way to push
	// its work: the environment that says where, with its token
	// (FOREMAN_PUSH_URL, FOREMAN_PUSH_TOKEN), given at each start.
	Push func(id string) ([]string, error)
	// Revoke, if set, ends what Push granted an agent (by its sender id),
	// once it is stopped for good: a TIMEOUT or a RELEASE took its work
	// to another, whose branch it must no longer reach.
	Revoke func(id string)
	Rules  Rules         // default: DefaultRules
	Grace  time.Duration // from SIGTERM to SIGKILL; default 10s
	Log    zerolog.Logger
	// View is the build as foreman sees it, for what budgets hold.
	View func(context.Context) (coordinator.View, error)
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Supervisor runs the agents by Team's rules.
type Supervisor struct {
	o      Options
	ws     map[string]Workspace
	grant  map[string][]string // each agent's exporter and push environment
	mcp    map[string][]string // what WriteMCP wrote for each agent
	agents map[string]config.Agent
	team   *Team

	mu     sync.Mutex
	status []Status
	said   []coordinator.Reply // from the bot's goroutine, for Run's
	wake   chan struct{}
}

// Root is where the workspaces of c's agents are.
func Root(c *config.Config) string {
	if c.Journal != "" {
		return filepath.Join(filepath.Dir(paste.Abs(c.Journal)), "agents")
	}
	return filepath.Join(filepath.Dir(paste.Abs(c.File)), ".foreman", "agents")
}

// New checks the agents' commands and makes their workspaces, keys and
// MCP configs: nothing starts yet. Its errors are one line, naming the
// agent.
func New(ctx context.Context, o Options) (*Supervisor, error) {
	c := o.Config
	if o.Root == "" {
		o.Root = Root(c)
	}
	if o.Program == "" {
		o.Program = paste.Program()
	}
	// An agent's CLI starts foreman mcp from anywhere: by its full path.
	if !filepath.IsAbs(o.Program) {
		if p, err := exec.LookPath(o.Program); err == nil && filepath.IsAbs(p) {
			o.Program = p
		} else if self, err := os.Executable(); err == nil {
			o.Program = self // go run's: there while up runs
		}
	}
	if o.Launch == nil {
		o.Launch = Exec
	}
	if o.WriteMCP == nil {
		o.WriteMCP = WriteMCP
	}
	if o.Rules == (Rules{}) {
		o.Rules = DefaultRules()
	}
	if o.Grace <= 0 {
		o.Grace = 10 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Supervisor{o: o, ws: map[string]Workspace{}, grant: map[string][]string{}, mcp: map[string][]string{}, agents: map[string]config.Agent{}, wake: make(chan struct{}, 1)}
	for i, a := range o.Agents {
		if _, err := exec.LookPath(a.Command[0]); err != nil {
			return nil, fmt.Errorf("agents[%d].command: %s: no such program on PATH (%s); install it, or give its absolute path", i, a.Command[0], cause(err))
		}
	}
	file := paste.Abs(c.File)
	var team []Status
	for _, a := range o.Agents {
		w, err := MakeWorkspace(ctx, o.Root, a.Name, c.Host.Repo, c.Host.Target)
		if err != nil {
			return nil, err
		}
		mcp := []string{o.Program, "mcp", "--identity", w.Key, "--name", a.Name, "--url", c.Server.URL, file}
		if s.mcp[a.Name], err = o.WriteMCP(w, mcp); err != nil {
			return nil, fmt.Errorf("agent %s: cannot write its MCP config in %s: %w", a.Name, w.Work, err)
		}
		// Once, for all its starts: its exporter's and its push's.
		s.grant[a.Name] = ExporterEnv(o.Endpoint, o.Secret, w.ID)
		if o.Push != nil {
			push, err := o.Push(w.ID)
			if err != nil {
				return nil, fmt.Errorf("agent %s: cannot grant it a way to push: %w", a.Name, err)
			}
			s.grant[a.Name] = append(s.grant[a.Name], push...)
		}
		s.ws[a.Name], s.agents[a.Name] = w, a
		team = append(team, Status{Name: a.Name, Role: a.Role, ID: w.ID, Log: w.Log})
	}
	s.team = NewTeam(o.Rules, team)
	s.status = s.team.Status()
	return s, nil
}

func cause(err error) string {
	var e *exec.Error
	if errors.As(err, &e) {
		return e.Err.Error()
	}
	return err.Error()
}

// Workspace is name's workspace.
func (s *Supervisor) Workspace(name string) Workspace { return s.ws[name] }

// Status is every agent as it stands.
func (s *Supervisor) Status() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Status(nil), s.status...)
}

// Observe is told what foreman said; it is called from the bot's
// goroutine, and only queues it for Run.
func (s *Supervisor) Observe(_ *coordinator.Event, said []coordinator.Reply) {
	if len(said) == 0 {
		return
	}
	s.mu.Lock()
	s.said = append(s.said, said...)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

type exit struct {
	name string
	err  error
}

// Run starts the agents and supervises them until ctx ends: then each is
// stopped (SIGTERM, SIGKILL after the grace) and Run returns once all are.
func (s *Supervisor) Run(ctx context.Context) {
	procs := map[string]Process{}
	exits := make(chan exit)
	logs := map[string]*os.File{}
	revoked := map[string]bool{}
	var timer *time.Timer
	var due <-chan time.Time
	do := func(acts []Action) {
		for len(acts) > 0 {
			a := acts[0]
			acts = acts[1:]
			switch a.Kind {
			case Say:
				s.o.Log.Warn().Str("agent", a.Agent).Msg(a.Text)
			case Stop:
				p := procs[a.Agent]
				if p == nil {
					continue
				}
				s.o.Log.Info().Str("agent", a.Agent).Int("pid", p.Pid()).Msg("stopping agent " + a.Agent + ": " + a.Text)
				_ = p.Signal(syscall.SIGTERM)
				time.AfterFunc(s.o.Grace, func() { _ = p.Signal(syscall.SIGKILL) }) // a process gone ignores it
			case Start:
				p, f, err := s.start(a.Agent)
				now := s.o.Now()
				if err != nil {
					acts = append(acts, s.team.StartFailed(a.Agent, err, now)...)
					continue
				}
				procs[a.Agent], logs[a.Agent] = p, f
				s.team.Started(a.Agent, p.Pid(), now)
				s.o.Log.Info().Str("agent", a.Agent).Int("pid", p.Pid()).Msg("agent " + a.Agent + " started")
				go func() { exits <- exit{a.Agent, p.Wait()} }()
			}
		}
		s.mu.Lock()
		s.status = s.team.Status()
		for _, st := range s.status {
			if st.State == Stopped && s.o.Revoke != nil && !revoked[st.Name] {
				revoked[st.Name] = true // for good: never started again
				s.o.Revoke(st.ID)
			}
		}
		s.mu.Unlock()
		if timer != nil {
			timer.Stop()
		}
		due = nil
		if next, ok := s.team.Next(); ok {
			timer = time.NewTimer(max(0, next.Sub(s.o.Now())))
			due = timer.C
		}
	}
	do(s.team.Begin(s.o.Now()))
	s.checkHolds(ctx, do)
	done := ctx.Done()
	for s.team.Live() || done != nil {
		select {
		case e := <-exits:
			delete(procs, e.name)
			if f := logs[e.name]; f != nil {
				fmt.Fprintf(f, "--- foreman up: agent %s exited: %s\n", e.name, how(e.err))
				f.Close()
				delete(logs, e.name)
			}
			do(s.team.Exited(e.name, how(e.err), s.o.Now()))
		case <-due:
			do(s.team.Tick(s.o.Now()))
		case <-s.wake:
			s.mu.Lock()
			said := s.said
			s.said = nil
			s.mu.Unlock()
			now := s.o.Now()
			for id, why := range Ousted(said) {
				do(s.team.TimedOut(id, why, now))
			}
			if Touches(said) {
				s.checkHolds(ctx, do)
			}
			if Ends(said) {
				do(s.team.Over("the build is COMPLETE"))
			}
		case <-done:
			done = nil
			do(s.team.Over("foreman up is stopping"))
		}
	}
	if timer != nil {
		timer.Stop()
	}
}

// checkHolds asks foreman which agents a budget holds.
func (s *Supervisor) checkHolds(ctx context.Context, do func([]Action)) {
	if s.o.View == nil || ctx.Err() != nil {
		return
	}
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	v, err := s.o.View(vctx)
	cancel()
	if err != nil {
		s.o.Log.Debug().Err(err).Msg("the agents' budget holds: no view of the build")
		return
	}
	do(s.team.Holds(HeldByBudget(v), s.o.Now()))
}

// start launches name's process, its output appended to its log.
func (s *Supervisor) start(name string) (Process, *os.File, error) {
	w, a := s.ws[name], s.agents[name]
	// Never through a link: a confined agent cannot write its directory,
	// but one foreman started unconfined before could have left one.
	f, err := os.OpenFile(w.Log, os.O_APPEND|os.O_CREATE|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(f, "--- foreman up: agent %s (%s) starting at %s: %s\n", name, w.ID, s.o.Now().UTC().Format(time.RFC3339), paste.Shell(a.Command))
	p, err := s.o.Launch(LaunchSpec{
		Name: name, Dir: w.Work, Argv: a.Command, Stdout: f, Stderr: f,
		Env: agentEnv(os.Environ(), w, s.o.Config.Server.URL, paste.Abs(s.o.Config.File), s.grant[name], a.Env),
		// Its clone (Dir), HOME and TMPDIR are its to write; its directory
		// above them only to read (its key, which foreman mcp reads): its
		// log, which foreman appends to and the board serves, is not its
		// to replace with a link to anything of foreman's.
		Writable: []string{w.Home, w.Tmp},
		Written:  s.mcp[name],
	})
	if err != nil {
		fmt.Fprintf(f, "--- foreman up: agent %s could not start: %v\n", name, err)
		f.Close()
		return nil, nil, err
	}
	return p, f, nil
}

// how says how a process ended.
func how(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return strings.TrimPrefix(err.Error(), "exec: ")
}
