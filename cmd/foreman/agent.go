package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/tooling/sim"
	"github.com/agentforeman/foreman/protocol"
)

// agentFlags are foreman agent's settings.
type agentFlags struct {
	url, channel, role, name, identity, coordinator string
	newIdentity                                     bool     // --new: make the --identity file if it is not there
	repo, target                                    string   // builder: where to push, and the branch work starts from
	pushURL, workspace                              string   // builder: the push gate's URL, and its clone that pushes there
	pushToken                                       string   // builder: its token at the gate, from the environment only
	namespaces                                      bool     // host.branch_namespaces: its branches are under its id
	hosts                                           []string // builder: the CI role (roles.ci), whose handoff lines it reads
	minute, rateLimit                               time.Duration
	seed                                            uint64
	noColor, json                                   bool

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
		Use:   "agent [CONFIG]",
		Short: "Join a room as a scripted builder, auditor, CI bot or operator, or chat by hand",
		Long: `agent joins an AgentChat room as one participant, to try foreman by hand
against any server (foreman serve runs one):

  --role builder   claims what TASKS offers (--prefer narrows it), checks in
                   with PROGRESS, says READY, fixes on FIX, waits on WAIT;
                   --silent-on, --block-on and --abort-on script trouble;
                   it pushes its work to host.repo (or --repo) at each
                   PROGRESS (naming the branch) and before each READY, for
                   foreman host to check, starting from the work a builder
                   before it left (its ACK's branch, the host's handoff);
                   with --push-url (foreman up sets FOREMAN_PUSH_URL and
                   FOREMAN_PUSH_TOKEN for the agents it starts) it commits
                   in its own clone (--workspace) and pushes through the
                   push gate instead, its branches named <its id>/<c>
  --role auditor   answers REVIEW with AUDIT PASS, or FAIL as --fail says,
                   and the reviews still owed in the room when it comes
  --role ci        answers a builder's READY with CI PASS, or FAIL (--fail),
                   and the READYs still unchecked in the room when it comes
  --role operator  settles escalations: RESOLVE, or ADD a missing component
  --role chat      prints the room and sends each line typed on stdin, to
                   speak the protocol yourself (CLAIM api, PROGRESS api 50...)
  --json           as chat, for a program: stdout is one JSON object per
                   line (raw sender ids, the room's times, foreman's replies
                   read into verb and fields; docs/AGENTS.md says the schema),
                   logs go to stderr only

The room is printed on stdout, each sender id in a line kept as said and
followed by its name once known. Scripted pacing is in contract time: --minute sets how long a contract
minute lasts (1m: real time, for a foreman with its stock rules).

The room (server.url, server.channel, server.rate_limit) is the config's, as
foreman run reads it (CONFIG, --config, FOREMAN_*, or foreman.yaml here), so
an agent meets foreman where it is; the flags override it.

Each run is a new agent id unless --identity names a key file; the id is
printed first, to list in foreman's roles. With a key file the display name
defaults to the one the file holds.`,
		Example: `  foreman agent --role builder --name b1 --prefer api,web
  foreman agent --role builder --name b1 --repo shop.git   # beside foreman host
  FOREMAN_PUSH_TOKEN=... foreman agent --role builder --push-url http://127.0.0.1:7070/ --workspace ws
  foreman agent --role builder --name b2 --silent-on api --abort-on 'web=invalid_specification: two logins'
  foreman agent --role auditor --name aud --fail api='no tests' --fail api
  foreman agent --role chat --identity .foreman/olga.json
  my-builder-script | foreman agent --json --identity .foreman/ada.json > events.jsonl`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runAgent(cmd, configArg(args), &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.url, "url", "", "AgentChat server URL (default: server.url)")
	fl.StringVar(&f.channel, "channel", "", "channel to join (default: server.channel)")
	fl.StringVar(&f.role, "role", "builder", "builder, auditor, ci, operator or chat")
	fl.StringVar(&f.name, "name", "", "display name (default: the identity file's, else the role)")
	fl.StringVar(&f.identity, "identity", "", "identity file to load (default: $FOREMAN_IDENTITY, which foreman up sets for the agents it starts; else a fresh key, a new id each run)")
	fl.BoolVar(&f.newIdentity, "new", false, "make the --identity file if it is not there (without --new a missing one is refused: a mistyped path would make another identity)")
	fl.StringVar(&f.coordinator, "coordinator", "", "foreman's agent id (default: the key in server.identity, beside the config; else whoever stamps its messages as foreman or says the first TASKS)")
	fl.DurationVar(&f.minute, "minute", time.Minute, "real length of a contract minute, for the scripted pacing")
	fl.DurationVar(&f.rateLimit, "rate-limit", time.Second, "the room's rate limit: one message per this interval (default: server.rate_limit)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the reaction jitter")
	fl.BoolVar(&f.noColor, "no-color", false, "no colours, even on a terminal")
	fl.BoolVar(&f.json, "json", false, "for programs: the room as JSON lines on stdout, lines to say on stdin (implies --role chat)")
	fl.StringSliceVar(&f.prefer, "prefer", nil, "builder: components to take, best first (default: any)")
	fl.StringVar(&f.repo, "repo", "", "builder: commit the work to this git repository on its own branch, at each PROGRESS (naming it: branch=) and before each READY, starting from host.target or from what a builder before it left (default: host.repo, when the config has one; \"\" for none)")
	fl.StringVar(&f.pushURL, "push-url", os.Getenv(config.EnvPushURL), "builder: push the work through this push gate instead, from its own clone (--workspace), with the token in $"+config.EnvPushToken+" (default: $"+config.EnvPushURL+", which foreman up sets)")
	fl.StringVar(&f.workspace, "workspace", ".", "builder with --push-url: its own clone of host.repo, where it commits")
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

// agentFlagKeys are the agent's flags that name the room, as run's do.
var agentFlagKeys = map[string]string{
	"url":        "server.url",
	"channel":    "server.channel",
	"rate-limit": "server.rate_limit",
}

func (a *app) runAgent(cmd *cobra.Command, file string, f *agentFlags) error {
	if err := checkRole(f.role); err != nil {
		return err // before a key is made for an agent that cannot run
	}
	if f.identity == "" {
		f.identity = os.Getenv(config.EnvIdentity) // foreman up's agents: their own key
	}
	if f.repo != "" && (f.role != sim.RoleBuilder || f.json) {
		return errors.New("--repo is for --role builder: a scripted builder's pushes")
	}
	if cmd.Flags().Changed("push-url") && f.pushURL != "" && (f.role != sim.RoleBuilder || f.json) {
		return errors.New("--push-url is for --role builder: a scripted builder's pushes")
	}
	if f.role != sim.RoleBuilder || f.json {
		f.pushURL = "" // FOREMAN_PUSH_URL is set for every agent foreman up starts, auditors too
	}
	if f.pushURL != "" && f.repo != "" {
		return fmt.Errorf("--repo %s and --push-url %s: a builder pushes one way; --repo beside foreman host, --push-url from its own clone through the push gate (\"\" for none)", f.repo, f.pushURL)
	}
	f.pushToken = os.Getenv(config.EnvPushToken)
	c, err := a.loadConfig(cmd, file, agentFlagKeys)
	if err != nil {
		return err
	}
	f.url, f.channel, f.rateLimit = c.Server.URL, c.Server.Channel, c.Server.RateLimit
	f.target, f.hosts = c.Host.Target, c.Roles.CI
	if f.role == sim.RoleBuilder && !f.json && !cmd.Flags().Changed("repo") && f.pushURL == "" {
		f.repo = c.Host.Repo // where the build's host checks: a builder beside it pushes there
	}
	f.namespaces = c.Host.BranchNamespaces
	if f.json {
		if cmd.Flags().Changed("role") && f.role != "chat" {
			return fmt.Errorf("--json with --role %s: --json is for a program that speaks for itself (it implies --role chat)", f.role)
		}
		f.role = "chat"
	}
	if fl := cmd.Flags().Lookup("log-level"); fl == nil || !fl.Changed {
		c.Log.Level = "warn"
	}
	log, err := a.logger(c)
	if err != nil {
		return err
	}
	id, err := agentIdentity(f.identity, f.name, f.role, f.newIdentity)
	if err != nil {
		return err
	}
	if f.name == "" {
		f.name = id.Name
	}
	ctx, stop := untilInterrupted(cmd)
	defer stop()

	show := newRoomShow(a.stdout, !f.noColor && isTTY(a.stdout), f.coordinator)
	show.Self, show.Role = id.AgentID(), f.role
	show.Names[id.AgentID()] = f.name
	show.SetRoles(c.Roles, rolesSource(c))
	show.hostRoles(c)
	if f.identity != "" {
		warnOpenIdentity(a.stderr, f.identity)
	}
	// Said when the room has let the agent in, not before: a server that
	// is down or refuses the key must not look like a joined room.
	joined := func() { fmt.Fprintf(a.stderr, "%s: in %s\n", f.name, f.channel) }
	fmt.Fprintf(a.stderr, "%s: agent id %s, role %s, joining %s at %s\n", f.name, id.AgentID(), f.role, f.channel, f.url)
	if f.json {
		return agentJSON(ctx, cmd.InOrStdin(), a.stdout, a.stderr, agentchat.Config{
			URL: f.url, Channel: f.channel, Name: f.name, Identity: id, RateLimit: f.rateLimit,
			Logger: log.With().Str("part", "room").Logger(),
		}, configCoordinator(c, f.coordinator), joined)
	}
	if f.role == "chat" {
		fmt.Fprint(a.stderr, chatIntro)
		return config.RoomError(chat(ctx, cmd.InOrStdin(), a.stderr, agentchat.Config{
			URL: f.url, Channel: f.channel, Name: f.name, Identity: id, RateLimit: f.rateLimit,
			Logger: log.With().Str("part", "room").Logger(),
		}, show, joined), c)
	}
	cfg := sim.Config{
		URL: f.url, Channel: f.channel, Name: f.name, Identity: id, Coordinator: configCoordinator(c, f.coordinator),
		Minute: f.minute, RateLimit: f.rateLimit, Seed: f.seed, Logger: log.With().Str("part", "room").Logger(),
		Show: show.lineAt,
	}
	p, err := f.participant(cfg)
	if err != nil {
		return err
	}
	go func() {
		select {
		case <-p.Joined():
			joined()
		case <-ctx.Done():
		}
	}()
	// A scripted role has nothing left to do once the build is complete:
	// it leaves, rather than wait in (or keep reconnecting to) a room that
	// its foreman up may close next.
	runCtx, leave := context.WithCancel(ctx)
	defer leave()
	go func() {
		select {
		case <-p.Complete():
			fmt.Fprintf(a.stderr, "%s: the build is complete; leaving\n", f.name)
			leave()
		case <-runCtx.Done():
		}
	}()
	return config.RoomError(p.Run(runCtx), c)
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
		if f.pushURL != "" || f.namespaces {
			// The namespace the host (InNamespace) and the gate (foreman
			// up grants each agent's token for it) take.
			s.Namespace = host.NamespaceName(cfg.Identity.AgentID())
		}
		switch {
		case f.pushURL != "":
			p, err := sim.NewGatePusher(f.workspace, f.pushURL, f.pushToken, f.target, cfg.Name, f.hosts)
			if err != nil {
				return nil, err
			}
			p.Hooks(&s)
		case f.repo != "":
			p, err := sim.NewPusher(f.repo, f.target, cfg.Name, f.hosts)
			if err != nil {
				return nil, err
			}
			p.Hooks(&s)
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
	return nil, fmt.Errorf("--role %q: no scripted participant plays it", f.role)
}

// checkRole refuses a role foreman agent cannot play.
func checkRole(role string) error {
	switch role {
	case sim.RoleBuilder, sim.RoleAuditor, sim.RoleCI, sim.RoleOperator, "chat":
		return nil
	}
	return fmt.Errorf("--role %q: want builder, auditor, ci, operator or chat", role)
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

// agentIdentity loads the key file (creates it if create), or makes a
// fresh key. A new key is named name, or the role; a loaded one keeps its
// name unless name is given. A missing file is refused unless create: a
// mistyped path would silently give the agent another id, and foreman
// would know it as somebody else.
func agentIdentity(path, name, role string, create bool) (*agentchat.Identity, error) {
	fresh := name
	if fresh == "" {
		fresh = role
	}
	if path == "" {
		return agentchat.NewIdentity(fresh)
	}
	if !create {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("--identity %s: no such file; check the path, or add --new to make a new identity there", path)
		}
	}
	id, _, err := agentchat.LoadOrCreateIdentity(path, fresh)
	if err == nil && (name != "" || id.Name == "") {
		id.Name = fresh
	}
	if err != nil {
		return nil, fmt.Errorf("identity %s: %w", path, err)
	}
	return id, nil
}
