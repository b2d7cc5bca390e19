package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/tooling/demo"
	"github.com/agentforeman/foreman/internal/tooling/sim"
	"github.com/agentforeman/foreman/protocol"
)

// agentFlags are foreman agent's settings.
type agentFlags struct {
	url, channel, role, name, identity, coordinator string
	minute, rateLimit                               time.Duration
	seed                                            uint64
	noColor                                         bool

	builder          sim.Builder
	prefer           []string
	silentOn         []string
	blockOn, abortOn []string
	quirkAfter       int
	delay            time.Duration
	fail             []string
}

func (a *app) agentCommand() *cobra.Command {
	f := agentFlags{builder: sim.DefaultBuilder()}
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Join a room as a scripted builder, auditor, CI bot or operator, or chat by hand",
		Long: `agent joins an AgentChat room as one participant, to try foreman by hand
against any server (foreman serve runs one):

  --role builder   claims what TASKS offers (--prefer narrows it), checks in
                   with PROGRESS, says READY, fixes on FIX, waits on WAIT;
                   --silent-on, --block-on and --abort-on script trouble
  --role auditor   answers REVIEW with AUDIT PASS, or FAIL as --fail says
  --role ci        answers a builder's READY with CI PASS, or FAIL (--fail)
  --role operator  settles escalations: RESOLVE, or ADD a missing component
  --role chat      prints the room and sends each line typed on stdin, to
                   speak the protocol yourself (CLAIM api, PROGRESS api 50...)

The room is printed on stdout, the sender ids in lines shown as names once
known. Scripted pacing is in contract time: --minute sets how long a contract
minute lasts (1m: real time, for a foreman with its stock rules).

Each run is a new agent id unless --identity names a key file; the id is
printed first, to list in foreman's roles.`,
		Example: `  foreman agent --role builder --name b1 --prefer api,web
  foreman agent --role builder --name b2 --silent-on api --abort-on 'web=invalid_specification: two logins'
  foreman agent --role auditor --name aud --fail api='no tests' --fail api
  foreman agent --role chat --name me`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runAgent(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.url, "url", "ws://127.0.0.1:6667", "AgentChat server URL")
	fl.StringVar(&f.channel, "channel", "#build", "channel to join")
	fl.StringVar(&f.role, "role", "builder", "builder, auditor, ci, operator or chat")
	fl.StringVar(&f.name, "name", "", "display name (default: the role)")
	fl.StringVar(&f.identity, "identity", "", "identity file to load or create (default: a fresh key, a new id each run)")
	fl.StringVar(&f.coordinator, "coordinator", "", "foreman's agent id (default: whoever says the first TASKS)")
	fl.DurationVar(&f.minute, "minute", time.Minute, "real length of a contract minute, for the scripted pacing")
	fl.DurationVar(&f.rateLimit, "rate-limit", time.Second, "the room's rate limit: one message per this interval")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the reaction jitter")
	fl.BoolVar(&f.noColor, "no-color", false, "no colours, even on a terminal")
	fl.StringSliceVar(&f.prefer, "prefer", nil, "builder: components to take, best first (default: any)")
	fl.DurationVar(&f.builder.React, "react", f.builder.React, "builder: thinking time between TASKS and CLAIM (contract time)")
	fl.DurationVar(&f.builder.Step, "step", f.builder.Step, "builder: time between PROGRESS lines (contract time)")
	fl.IntVar(&f.builder.Steps, "steps", f.builder.Steps, "builder: lines per component, READY included")
	fl.IntVar(&f.builder.FixSteps, "fix-steps", f.builder.FixSteps, "builder: lines after a FIX, READY included")
	fl.DurationVar(&f.builder.Rest, "rest", 0, "builder: pause after a component leaves its hands (contract time)")
	fl.StringSliceVar(&f.silentOn, "silent-on", nil, "builder: go silent on this component (times out)")
	fl.StringArrayVar(&f.blockOn, "block-on", nil, "builder: c=dep: say BLOCKED c dep, then wait for UNBLOCKED")
	fl.StringArrayVar(&f.abortOn, "abort-on", nil, "builder: c=reason: say ABORT c reason")
	fl.IntVar(&f.quirkAfter, "quirk-after", 1, "builder: PROGRESS lines before --silent-on, --block-on or --abort-on strike")
	fl.DurationVar(&f.delay, "delay", 2*time.Minute, "auditor, ci, operator: time before answering (contract time)")
	fl.StringArrayVar(&f.fail, "fail", nil, "auditor, ci: c or c=details: fail one more review (or run) of c")
	return cmd
}

func (a *app) runAgent(cmd *cobra.Command, f *agentFlags) error {
	c, err := a.settings(cmd, nil)
	if err != nil {
		return err
	}
	if fl := cmd.Flags().Lookup("log-level"); fl == nil || !fl.Changed {
		c.Log.Level = "warn"
	}
	log, err := a.logger(c)
	if err != nil {
		return err
	}
	if f.name == "" {
		f.name = f.role
	}
	id, err := agentIdentity(f.identity, f.name)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	show := newRoomShow(a.stdout, !f.noColor && isTTY(a.stdout), f.coordinator)
	show.self, show.role = id.AgentID(), f.role
	show.names[id.AgentID()] = f.name // the room never echoes its own lines back
	fmt.Fprintf(a.stderr, "%s: agent id %s, role %s, in %s at %s\n", f.name, id.AgentID(), f.role, f.channel, f.url)
	if f.role == "chat" {
		return chat(ctx, cmd.InOrStdin(), agentchat.Config{
			URL: f.url, Channel: f.channel, Name: f.name, Identity: id, RateLimit: f.rateLimit,
			Logger: log.With().Str("part", "room").Logger(),
		}, show)
	}
	cfg := sim.Config{
		URL: f.url, Channel: f.channel, Name: f.name, Identity: id, Coordinator: f.coordinator,
		Minute: f.minute, RateLimit: f.rateLimit, Seed: f.seed, Logger: log.With().Str("part", "room").Logger(),
		Show: show.line,
	}
	p, err := f.participant(cfg)
	if err != nil {
		return err
	}
	return p.Run(ctx)
}

// participant makes the sim the flags describe.
func (f *agentFlags) participant(cfg sim.Config) (*sim.Participant, error) {
	fails, err := failures(f.fail)
	if err != nil {
		return nil, err
	}
	switch f.role {
	case sim.RoleBuilder:
		s := f.builder
		s.Prefer = f.prefer
		s.Quirks = map[string]sim.Quirk{}
		for _, c := range f.silentOn {
			s.Quirks[c] = sim.Quirk{Kind: sim.GoSilent, After: f.quirkAfter}
		}
		for _, kv := range f.blockOn {
			c, dep, ok := strings.Cut(kv, "=")
			if !ok || c == "" || dep == "" {
				return nil, fmt.Errorf("--block-on %q: want c=dep", kv)
			}
			s.Quirks[c] = sim.Quirk{Kind: sim.Block, After: f.quirkAfter, Dep: dep}
		}
		for _, kv := range f.abortOn {
			c, reason, ok := strings.Cut(kv, "=")
			if !ok || c == "" || strings.TrimSpace(reason) == "" {
				return nil, fmt.Errorf("--abort-on %q: want c=reason", kv)
			}
			s.Quirks[c] = sim.Quirk{Kind: sim.Abort, After: f.quirkAfter, Reason: reason}
		}
		return sim.NewBuilder(cfg, s)
	case sim.RoleAuditor:
		return sim.NewAuditor(cfg, sim.Auditor{Delay: f.delay, Fail: fails})
	case sim.RoleCI:
		return sim.NewCI(cfg, sim.CI{Delay: f.delay, Fail: fails})
	case sim.RoleOperator:
		return sim.NewOperator(cfg, sim.Operator{Delay: f.delay})
	}
	return nil, fmt.Errorf("--role %q: want builder, auditor, ci, operator or chat", f.role)
}

// failures reads --fail values: each c or c=details fails one more of c's
// reviews, in order.
func failures(vals []string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, v := range vals {
		c, details, _ := strings.Cut(v, "=")
		if !protocol.ValidComponent(c) {
			return nil, fmt.Errorf("--fail %q: want c or c=details", v)
		}
		if details == "" {
			details = "changes requested"
		}
		out[c] = append(out[c], details)
	}
	return out, nil
}

// agentIdentity loads or creates the key file, or makes a fresh key.
func agentIdentity(path, name string) (*agentchat.Identity, error) {
	if path == "" {
		return agentchat.NewIdentity(name)
	}
	id, _, err := agentchat.LoadOrCreateIdentity(path, name)
	if err != nil {
		return nil, fmt.Errorf("identity %s: %w", path, err)
	}
	return id, nil
}

// roomShow prints the room with wall-clock times. Names are learned from
// the room; the coordinator is the one given, or the first to say TASKS.
type roomShow struct {
	p     *demo.Printer
	w     io.Writer
	color bool
	coord string
	names map[string]string
	self  string // the agent's own id, shown with its role
	role  string
}

func newRoomShow(w io.Writer, color bool, coord string) *roomShow {
	return &roomShow{w: w, color: color, coord: coord, names: map[string]string{}}
}

func (s *roomShow) line(from, name, text string) {
	if s.coord == "" && protocol.VerbOf(text) == protocol.ReplyTasks {
		s.coord = from
	}
	if name == "" {
		name = from
	}
	if s.p == nil || s.names[from] != name {
		s.names[from] = name
		members := map[string]demo.Member{}
		for id, n := range s.names {
			members[id] = demo.Member{Name: n}
		}
		s.p = demo.NewPrinter(s.w, s.color, members)
	}
	m := demo.Member{Name: name}
	switch from {
	case s.coord:
		m.Role = demo.RoleCoordinator
	case s.self:
		m.Role = s.role
	}
	s.p.Print(time.Now().Format(time.TimeOnly), m, text)
}

// chat prints the room and sends what is typed, one line per message line,
// until stdin ends (after what was typed has reached the room) or ctx does.
func chat(ctx context.Context, stdin io.Reader, cfg agentchat.Config, show *roomShow) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := agentchat.New(cfg)
	runErr := make(chan error, 1)
	go func() { runErr <- client.Run(ctx) }()
	typed := make(chan string)
	go func() {
		defer close(typed)
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			select {
			case typed <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	var seq uint64
	var drained <-chan time.Time // set once stdin ends
	var giveUp <-chan time.Time
	events := client.Events()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return <-runErr
			}
			switch ev := ev.(type) {
			case agentchat.Joined: // what was said before, or while reconnecting
				for _, m := range ev.History {
					showMessage(show, m)
				}
			case agentchat.Message:
				showMessage(show, ev)
			}
		case l, ok := <-typed:
			if !ok {
				typed = nil
				drained = time.After(0)
				giveUp = time.After(10 * time.Second)
				continue
			}
			if l = strings.TrimSpace(l); l != "" {
				seq++
				client.Send(agentchat.Line{Seq: seq, Text: l})
			}
		case <-drained:
			if client.Stats().Queued == 0 {
				cancel()
				continue
			}
			drained = time.After(20 * time.Millisecond)
		case <-giveUp:
			cancel()
		case <-ctx.Done():
			return <-runErr
		}
	}
}

func showMessage(show *roomShow, m agentchat.Message) {
	if m.Notice || m.Self {
		return
	}
	for l := range protocol.Lines(m.Body()) {
		show.line(m.From, m.FromName, strings.TrimSpace(l))
	}
}
