package web

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/agentchat/server"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/bot"
	"github.com/agentforeman/foreman/internal/config"
)

// liveBuild is a whole build on this machine: a room (the embedded chat
// server), foreman's bot with the board's hooks, the board on a real
// listener, and agents that are real clients of the room, scripted by the
// test one line at a time.
type liveBuild struct {
	t      *testing.T
	URL    string // the board
	board  *Server
	bot    *bot.Bot
	logs   string // host.logs as the board reads it: a test writes a host's queue there
	agents map[string]*agent

	mu   sync.Mutex
	said []string      // every line foreman said, in order
	news chan struct{} // closed and replaced when foreman says something
}

type agent struct {
	ID  string
	key *agentchat.Identity
	c   *agentchat.Client
	mu  sync.Mutex
	seq uint64
}

// liveTimeout bounds each wait of a live build; the machine may be slow
// and shared, so it is generous.
const liveTimeout = 30 * time.Second

// startLiveBuild starts the build with the agents named (the names
// "auditor" and "operator" get those roles). The build starts when foreman
// joins: expect its TASKS (or, on a cycle, its ESCALATE) before acting.
func startLiveBuild(t *testing.T, comps []coordinator.Component, names ...string) *liveBuild {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	room, err := server.Start(ctx, server.Config{Listen: "127.0.0.1:0", Channels: []string{"#build"}, Logger: zerolog.Nop()})
	require.NoError(t, err)

	lb := &liveBuild{t: t, agents: map[string]*agent{}, news: make(chan struct{})}
	joined := make(chan string, len(names))
	for _, name := range names {
		id, err := agentchat.NewIdentity(name)
		require.NoError(t, err)
		c := agentchat.New(agentchat.Config{URL: room.URL(), Channel: "#build", Identity: id,
			RateLimit: 20 * time.Millisecond, Logger: zerolog.Nop()})
		lb.agents[name] = &agent{ID: id.AgentID(), key: id, c: c}
		wg.Add(2)
		go func() { defer wg.Done(); _ = c.Run(ctx) }()
		go func() {
			defer wg.Done()
			// Agents read nothing: the script waits on what foreman said.
			// Draining keeps the client from stalling on a full queue.
			for ev := range c.Events() {
				if _, ok := ev.(agentchat.Joined); ok {
					joined <- name
				}
			}
		}()
	}
	for range names {
		select {
		case <-joined:
		case <-time.After(liveTimeout):
			t.Fatal("the agents did not join the room")
		}
	}

	cfg := &config.Config{
		Server: config.Server{URL: room.URL(), Channel: "#build", Name: "foreman", RateLimit: 20 * time.Millisecond},
		Build:  config.Build{Name: "shop", Components: comps},
		Rules:  coordinator.DefaultRules(),
	}
	if a, ok := lb.agents["auditor"]; ok {
		// The auditor is the CI role too: it says the host's OVERLAP.
		cfg.Roles.Auditors, cfg.Roles.CI = []string{a.ID}, []string{a.ID}
	}
	if a, ok := lb.agents["operator"]; ok {
		cfg.Roles.Operators = []string{a.ID}
	}
	botID, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	lb.logs = t.TempDir()
	lb.board = New(Options{Logger: zerolog.Nop(), HostLogs: lb.logs, Operators: func() []string { return cfg.Roles.Operators }})
	b, err := bot.New(bot.Options{
		Config: cfg, Identity: botID, Logger: zerolog.Nop(), ShutdownGrace: time.Second,
		Observe: func(ev *coordinator.Event, said []coordinator.Reply) {
			lb.board.Observe(ev, said)
			lb.heardFromForeman(said)
		},
		Handled: lb.board.Handled,
		Named:   lb.board.Named,   // the members' names, as the room tells the bot
		Members: lb.board.Members, // who is in the room
	})
	require.NoError(t, err)
	lb.board.Attach(b)
	lb.bot = b
	ln := listen(t)
	lb.URL = "http://" + ln.Addr().String() + "/"
	wg.Add(2)
	go func() { defer wg.Done(); _ = b.Run(ctx) }()
	go func() { defer wg.Done(); _ = lb.board.Serve(ctx, ln) }()
	return lb
}

func (lb *liveBuild) heardFromForeman(said []coordinator.Reply) {
	if len(said) == 0 {
		return
	}
	lb.mu.Lock()
	defer lb.mu.Unlock()
	for _, r := range said {
		lb.said = append(lb.said, r.Text)
	}
	close(lb.news)
	lb.news = make(chan struct{})
}

// id is an agent's sender id, for the lines foreman says about it.
func (lb *liveBuild) id(name string) string { return lb.agents[name].ID }

// say has an agent say lines in the room, as one message.
func (lb *liveBuild) say(name string, lines ...string) {
	a := lb.agents[name]
	require.NotNil(lb.t, a, "no agent %s", name)
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []agentchat.Line
	for _, l := range lines {
		a.seq++
		out = append(out, agentchat.Line{Seq: a.seq, Text: l})
	}
	a.c.Send(out...)
}

// expect waits until foreman has said a line starting with prefix.
func (lb *liveBuild) expect(prefix string) {
	lb.t.Helper()
	deadline := time.After(liveTimeout)
	for {
		lb.mu.Lock()
		news := lb.news
		for _, l := range lb.said {
			if strings.HasPrefix(l, prefix) {
				lb.mu.Unlock()
				return
			}
		}
		said := strings.Join(lb.said, "\n")
		lb.mu.Unlock()
		select {
		case <-news:
		case <-deadline:
			lb.t.Fatalf("foreman never said %q; it said:\n%s", prefix, said)
		}
	}
}

// shop is the build the live tests run: db first, three components on
// it, cart on two of them, web at the end on two more, one two columns away.
func shop() []coordinator.Component {
	return []coordinator.Component{
		{Name: "db"},
		{Name: "auth", Deps: []string{"db"}},
		{Name: "catalog", Deps: []string{"db"}},
		{Name: "docs", Deps: []string{"db"}},
		{Name: "cart", Deps: []string{"auth", "catalog"}},
		{Name: "web", Deps: []string{"catalog", "cart"}},
	}
}

// liveCast are the agents of the live tests.
var liveCast = []string{"b1", "b2", "b3", "auditor", "operator"}

// The script of the live tests, in three acts, each ending on a line
// foreman says. Between acts a test looks at the board.

// actOne builds db through to merged, one step at a time; step is called
// after each with the state db should show.
func (lb *liveBuild) actOne(step func(state string)) {
	lb.say("b1", "CLAIM db")
	lb.expect("ACK db " + lb.id("b1"))
	step("building")
	lb.say("b1", "PROGRESS db 60 schema written")
	step("progress") // a PROGRESS gets no answer: the step itself waits for it

	lb.say("b1", "READY db https://example.test/pr/1")
	lb.expect("REVIEW db " + lb.id("b1"))
	step("review")
	lb.say("auditor", "AUDIT db PASS")
	lb.expect("MERGED db")
	step("merged")
}

// actTwo leaves the build mid-flight: auth in review, catalog held by a
// hard blocker, docs building at 45% on branch b3/docs and overlapping
// auth, cart and web pending.
func (lb *liveBuild) actTwo() {
	lb.say("b1", "CLAIM auth")
	lb.expect("ACK auth " + lb.id("b1"))
	lb.say("b2", "CLAIM catalog")
	lb.expect("ACK catalog " + lb.id("b2"))
	lb.say("b3", "CLAIM docs")
	lb.expect("ACK docs " + lb.id("b3"))
	lb.say("b3", "PROGRESS docs 45 branch=b3/docs API reference half done")
	lb.say("b1", "PROGRESS auth 80", "READY auth https://example.test/pr/2")
	lb.expect("REVIEW auth " + lb.id("b1"))
	lb.say("auditor", "OVERLAP docs auth docs/auth.md")
	lb.say("b2", "ABORT catalog missing_dependency: the product schema was never specified")
	lb.expect("ESCALATE catalog hard-blocker")
}

// actThree settles the blocker and finishes the build.
func (lb *liveBuild) actThree() {
	lb.say("operator", "RESOLVE catalog the schema is in db/README")
	lb.expect("OK RESOLVE catalog")
	lb.say("b2", "CLAIM catalog")
	lb.expect("ACK catalog " + lb.id("b2"))
	lb.say("b2", "READY catalog https://example.test/pr/3")
	lb.expect("REVIEW catalog " + lb.id("b2"))
	lb.say("auditor", "AUDIT catalog PASS", "AUDIT auth PASS")
	lb.expect("MERGED auth")
	lb.say("b3", "READY docs https://example.test/pr/4")
	lb.expect("REVIEW docs " + lb.id("b3"))
	lb.say("auditor", "AUDIT docs PASS")
	lb.say("b1", "CLAIM cart")
	lb.expect("ACK cart " + lb.id("b1"))
	lb.say("b1", "READY cart https://example.test/pr/5")
	lb.expect("REVIEW cart " + lb.id("b1"))
	lb.say("auditor", "AUDIT cart PASS")
	lb.expect("MERGED cart")
	lb.say("b2", "CLAIM web")
	lb.expect("ACK web " + lb.id("b2"))
	lb.say("b2", "PROGRESS web 90", "READY web https://example.test/pr/6")
	lb.expect("REVIEW web " + lb.id("b2"))
	lb.say("auditor", "AUDIT web PASS")
	lb.expect("COMPLETE shop")
}
