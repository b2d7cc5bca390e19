package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/agentchat/server"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/bot"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/tooling/sim"
)

// Options configure a demo. The zero value is the stock demo, printing
// nothing.
type Options struct {
	// Minute is the real length of a contract minute (default 100ms). Every
	// duration of the rules and of the agents' pacing is scaled by it.
	Minute time.Duration
	Seed   uint64 // the agents' reaction jitter
	Listen string // the chat server's address (default 127.0.0.1:0, a free port)
	CI     bool   // turn ci_gating on and add a CI bot
	// Git makes the work real: a temporary git repository the builders
	// push to, and foreman host as the CI role and the merger (merge mode
	// external), checking each READY and landing what is approved; the
	// demo ends with git log --graph of main. It implies CI gating, with
	// the host instead of a CI bot.
	Git bool

	Out   io.Writer // the chat log and the summary; nil: nowhere
	Color bool      // ANSI colours in Out
	Quiet bool      // the summary only, no chat log

	// Dir keeps the journal and the recorded transcript; "": a temporary
	// directory, removed at the end.
	Dir string
	// HTTP is the listen address of the board, set in the bot's
	// configuration for whoever serves it from OnBot.
	HTTP string
	// OnBot is called once the bot exists, before it joins the room.
	OnBot func(*bot.Bot)
	// Observe is handed to the bot (bot.Options.Observe).
	Observe func(ev *coordinator.Event, said []coordinator.Reply)
	// Handled is handed to the bot (bot.Options.Handled).
	Handled func(d time.Duration, events int)
	// Named is handed to the bot (bot.Options.Named).
	Named func(id, name string)

	Logger zerolog.Logger // the bot's, the server's and the clients' logs (default: none)
	// Limit is how long the build may take in real time before the demo
	// gives up (default: 6 contract hours, plus 10s to start).
	Limit time.Duration
}

const (
	channel     = "#build"
	journalFile = "journal"
)

func (o *Options) defaults() {
	if o.Minute <= 0 {
		o.Minute = 100 * time.Millisecond
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Limit <= 0 {
		o.Limit = sim.Scale(6*time.Hour, o.Minute) + 10*time.Second
	}
}

// RateLimit is the room's pace for a given contract minute: one message
// per half a contract minute per sender (50ms at the default 100ms). Scaling
// the stock 1s by the clock's ratio would give under 2ms, a pace no real
// room keeps; half a contract minute keeps each sender's messages apart in
// the log, and is far below every rule's timing, so the pace never decides
// the story. (The AgentChat client also sends at most 2.5 messages a second
// once it has spent a burst of 25, to stay under a stock server's flood
// limit; batching makes that enough for foreman at any minute above about
// 50ms.)
func RateLimit(minute time.Duration) time.Duration {
	return max(minute/2, 5*time.Millisecond)
}

// Run plays the demo until the build is complete, ctx ends or Limit passes.
func Run(ctx context.Context, o Options) (*Result, error) {
	o.defaults()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	dir, cleanup, err := workDir(o.Dir)
	if err != nil {
		return nil, err
	}
	defer cleanup()

	rate := RateLimit(o.Minute)
	srv, err := server.Start(ctx, server.Config{
		Listen: o.Listen, Channels: []string{channel}, RateLimit: rate, BufferSize: 200,
		Logger: o.Logger.With().Str("part", "server").Logger(),
	})
	if err != nil {
		return nil, fmt.Errorf("cannot start the chat server on %s: %w", o.Listen, err)
	}
	defer srv.Close()

	s := &show{o: o, res: &Result{Build: buildName, Components: len(Bookshop()), Minute: o.Minute, Dir: o.Dir},
		complete: make(chan struct{})}
	if o.Git {
		if s.git, err = newGitStage(ctx, dir); err != nil {
			return nil, err
		}
	}
	botID, err := agentchat.NewIdentity(botName)
	if err != nil {
		return nil, err
	}
	parts, err := s.cast(srv.URL(), rate, botID.AgentID())
	if err != nil {
		return nil, err
	}
	members := map[string]Member{botID.AgentID(): {Name: botName, Role: RoleCoordinator}}
	if s.git != nil {
		members[s.git.id.AgentID()] = Member{Name: hostName, Role: sim.RoleCI}
	}
	for _, p := range parts {
		members[p.ID()] = Member{Name: p.Name(), Role: p.Role()}
	}
	s.printer = NewPrinter(o.Out, o.Color, members)
	s.coordinator = botID.AgentID()
	if !o.Quiet {
		s.intro(parts)
	}

	// Everyone is in the room before foreman starts the build: a late
	// agent would miss the first TASKS.
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }() // on every return: stop everyone, then wait for them
	failed := make(chan error, len(parts)+2)
	goRun := func(name string, run func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(ctx); err != nil {
				failed <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	watcher, err := s.watcher(srv.URL(), rate)
	if err != nil {
		return nil, err
	}
	goRun(watcherName, watcher.run)
	joined := []<-chan struct{}{watcher.joined}
	for _, p := range parts {
		goRun(p.Name(), p.Run)
		joined = append(joined, p.Joined())
	}
	join := time.After(10 * time.Second)
	for _, j := range joined {
		select {
		case <-j:
		case err := <-failed:
			return nil, err
		case <-join:
			return nil, errors.New("the simulated agents could not join the room within 10s")
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}

	cfg := s.config(srv.URL(), rate, dir, parts)
	if s.git != nil {
		s.git.config(cfg, botID.AgentID(), s.o.Minute)
	}
	b, err := bot.New(bot.Options{
		Config: cfg, Logger: o.Logger, Identity: botID,
		Observe: s.observe, Handled: o.Handled, Named: o.Named, ShutdownGrace: 2 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	if o.OnBot != nil {
		o.OnBot(b)
	}
	goRun(botName, b.Run)
	if s.git != nil {
		goRun(hostName, func(ctx context.Context) error { return s.git.run(ctx, cfg, o.Logger) })
	}

	limit := time.NewTimer(o.Limit)
	defer limit.Stop()
	select {
	case <-s.complete:
	case err = <-failed:
	case <-limit.C:
		err = fmt.Errorf("the build did not complete within %s", o.Limit)
	case <-ctx.Done():
		err = ctx.Err()
	}
	cancel()
	wg.Wait()
	res := s.result()
	if s.git != nil {
		res.Repo = s.git.repo.Dir()
		res.GitLog = s.git.graph(context.Background())
		var ok bool
		res.Verify, ok = s.git.verify(context.Background())
		if !ok && err == nil {
			err = errors.New("foreman verify: main holds commits foreman host did not land with a receipt that holds (the table above says which)")
		}
	}
	res.WriteSummary(o.Out, o.Color)
	return res, err
}

// workDir is where the journal and the recording go: dir, kept, or a
// temporary directory that cleanup removes.
func workDir(dir string) (string, func(), error) {
	if dir != "" {
		// An old journal would make the bot resume that build, whose
		// agents are gone: every demo starts afresh.
		if _, err := os.Stat(filepath.Join(dir, journalFile)); err == nil {
			return "", nil, fmt.Errorf("%s already holds a demo's journal; give an empty directory", dir)
		}
		return dir, func() {}, os.MkdirAll(dir, 0o755)
	}
	tmp, err := os.MkdirTemp("", "foreman-demo-")
	if err != nil {
		return "", nil, err
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}

// show is one run of the demo: the cast, the watcher and what it heard.
type show struct {
	o           Options
	printer     *Printer
	coordinator string

	start    atomic.Int64 // the build's start, Unix ms, from the bot
	mu       sync.Mutex
	res      *Result
	complete chan struct{}
	ended    time.Time

	git *gitStage // the --git demo's repository and host; nil without --git

	// identity gives each member its key; nil: a fresh one each run.
	identity func(name string) *agentchat.Identity
	// now is the clock that ends an unfinished build; nil: the wall clock.
	now func() time.Time
}

// cast makes the simulated agents.
func (s *show) cast(url string, rate time.Duration, coord string) ([]*sim.Participant, error) {
	cfg := func(name string, i int) sim.Config {
		c := sim.Config{
			URL: url, Channel: channel, Name: name, Coordinator: coord, Minute: s.o.Minute,
			RateLimit: rate, Seed: s.o.Seed + uint64(i),
			Logger: s.o.Logger.With().Str("part", name).Logger(),
		}
		if s.identity != nil {
			c.Identity = s.identity(name)
		}
		return c
	}
	var parts []*sim.Participant
	add := func(p *sim.Participant, err error) error {
		if err == nil {
			parts = append(parts, p)
		}
		return err
	}
	for i, b := range cast() {
		if s.git != nil {
			p, err := s.git.pusher(b.name, []string{s.git.id.AgentID()})
			if err != nil {
				return nil, err
			}
			p.Hooks(&b.script)
		}
		if err := add(sim.NewBuilder(cfg(b.name, i), b.script)); err != nil {
			return nil, err
		}
	}
	if err := add(sim.NewAuditor(cfg(auditorName, 10), auditorScript())); err != nil {
		return nil, err
	}
	if s.o.CI && s.git == nil {
		if err := add(sim.NewCI(cfg(ciName, 11), ciScript())); err != nil {
			return nil, err
		}
	}
	if err := add(sim.NewOperator(cfg(operatorName, 12), operatorScript())); err != nil {
		return nil, err
	}
	return parts, nil
}

// intro says what is about to happen and who is who.
func (s *show) intro(parts []*sim.Participant) {
	var names []string
	for _, c := range Bookshop() {
		names = append(names, c.Name)
	}
	byRole := map[string][]string{}
	var roles []string
	for _, p := range parts {
		if byRole[p.Role()] == nil {
			roles = append(roles, p.Role())
		}
		byRole[p.Role()] = append(byRole[p.Role()], p.Name())
	}
	var cast []string
	for _, r := range roles {
		label := roleLabels[r]
		if len(byRole[r]) > 1 {
			label += "s"
		}
		cast = append(cast, label+" "+strings.Join(byRole[r], ", "))
	}
	ci := "off"
	if s.o.CI {
		ci = "on"
	}
	if s.git != nil {
		cast = append(cast, "foreman host "+hostName+" (CI and merger)")
		ci = "on, by foreman host on a real repository, merge mode external"
	}
	// The rules that differ from the defaults are said, so that FIX n/2 is
	// not read as foreman miscounting the default three attempts.
	fmt.Fprintf(s.o.Out, "foreman demo: building %s (%s)\n%s\nclock: one contract minute = %s; times below are contract time; CI gating %s; %d audit attempts\n\n",
		buildName, strings.Join(names, ", "), strings.Join(cast, "; "), s.o.Minute, ci, rules(s.o.CI).AuditAttempts)
	if s.git != nil {
		fmt.Fprintf(s.o.Out, "git: the builders push branches to %s; the host checks each READY with `git diff --check` on what would land (%s), rebases what conflicts when a rebase is clean, and lands approved work on main\n\n", s.git.repo.Dir(), s.git.sandboxNote())
	}
}

var roleLabels = map[string]string{
	sim.RoleBuilder: "builder", sim.RoleAuditor: "auditor", sim.RoleCI: "CI bot", sim.RoleOperator: "operator",
}

// config is foreman's configuration for the demo, with the cast's ids in
// the roles.
func (s *show) config(url string, rate time.Duration, dir string, parts []*sim.Participant) *config.Config {
	var roles coordinator.Roles
	for _, p := range parts {
		switch p.Role() {
		case sim.RoleAuditor:
			roles.Auditors = append(roles.Auditors, p.ID())
		case sim.RoleCI:
			roles.CI = append(roles.CI, p.ID())
		case sim.RoleOperator:
			roles.Operators = append(roles.Operators, p.ID())
		}
	}
	r := rules(s.o.CI)
	if s.git != nil {
		r = gitRules()
	}
	return &config.Config{
		Server:  config.Server{URL: url, Channel: channel, Name: botName, RateLimit: rate},
		Build:   config.Build{Name: buildName, Components: Bookshop()},
		Roles:   roles,
		Rules:   scaled(r, s.o.Minute),
		Journal: filepath.Join(dir, journalFile),
		Record:  filepath.Join(dir, buildName+".txt"),
		HTTP:    s.o.HTTP,
		Log:     config.Log{Level: "error", Format: "json"},
	}
}

// observe notes when the build started (the bot's first call is its start)
// and passes everything on.
func (s *show) observe(ev *coordinator.Event, said []coordinator.Reply) {
	s.start.CompareAndSwap(0, ev.At.UnixMilli())
	if s.o.Observe != nil {
		s.o.Observe(ev, said)
	}
}

// since is contract time from the build's start to the room time ts.
func (s *show) since(ts time.Time) time.Duration {
	start := s.start.Load()
	if start == 0 {
		return 0
	}
	return sim.Unscale(ts.Sub(time.UnixMilli(start)), s.o.Minute)
}

// heard records and prints one message of the room.
func (s *show) heard(m agentchat.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := s.since(m.TS)
	for _, l := range splitLines(m.Body()) {
		e := Entry{At: at, From: m.From, Member: s.printer.Member(m.From), Line: l}
		s.res.Room = append(s.res.Room, e)
		if !s.o.Quiet {
			s.printer.Print(Clock(at), e.Member, l)
		}
		if m.From == s.coordinator && firstWord(l) == "COMPLETE" && s.ended.IsZero() {
			s.ended = m.TS
			close(s.complete)
		}
	}
}

func (s *show) result() *Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.res
	r.Complete = !s.ended.IsZero()
	end := s.ended
	if end.IsZero() {
		end = time.Now()
		if s.now != nil {
			end = s.now()
		}
	}
	if start := s.start.Load(); start != 0 {
		r.Real = end.Sub(time.UnixMilli(start))
		r.Contract = sim.Unscale(r.Real, s.o.Minute)
	}
	r.count()
	return r
}
