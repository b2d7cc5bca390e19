package demo

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/node"
	"github.com/agentforeman/foreman/internal/tooling/sim"
)

// virtualStart is when a simulated build starts, by the stage's clock.
var virtualStart = time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)

// Simulate plays the demo as Run does, with the same cast and the same
// engine, on a virtual clock instead of a room: the cast plays on a
// sim.Stage, and foreman's engine runs through internal/node as the bot runs
// it, waking at each deadline. Nothing races and nothing sleeps, so a seed
// tells the same story every time, in milliseconds, however loaded the
// machine; every member's key derives from its name and the seed, so even
// the agent ids repeat.
//
// Of the options, Minute, Seed, CI, Out, Color, Quiet, Observe and Limit
// (in virtual time) count; there is no server, bot, journal or recording,
// so Listen, Dir, HTTP, OnBot, Handled and Logger do not. Git needs real
// git and a real host: it is refused here (Run plays it).
func Simulate(o Options) (*Result, error) {
	if o.Git {
		return nil, errors.New("the --git demo runs git and foreman host for real: it has no virtual clock (use Run)")
	}
	o.Dir = ""
	o.defaults()
	rate := RateLimit(o.Minute)
	stage := sim.NewStage(virtualStart, rate)
	s := &show{o: o, res: &Result{Build: buildName, Components: len(Bookshop()), Minute: o.Minute, Virtual: true},
		complete: make(chan struct{}), now: stage.Now,
		identity: func(name string) *agentchat.Identity { return seededIdentity(name, o.Seed) }}
	botID := s.identity(botName).AgentID()
	parts, err := s.cast("", rate, botID)
	if err != nil {
		return nil, err
	}
	members := map[string]Member{botID: {Name: botName, Role: RoleCoordinator}}
	for _, p := range parts {
		members[p.ID()] = Member{Name: p.Name(), Role: p.Role()}
	}
	s.printer = NewPrinter(o.Out, o.Color, members)
	s.coordinator = botID
	if !o.Quiet {
		s.intro(parts)
	}

	// The watcher joins first, then the cast, then foreman, as in Run.
	stage.Listen(watcherName, watcherName, func(m agentchat.Message) { s.heard(m) })
	for _, p := range parts {
		stage.Add(p)
	}
	n, err := node.Open(node.Config{Engine: s.config("", rate, "", parts).Engine(botID), SnapshotEvery: -1, Observe: s.observe})
	if err != nil {
		return nil, err
	}
	fm := sim.NewBot(stage, botID, botName, n)
	n.Step(coordinator.Event{Kind: coordinator.KindStart, At: stage.Now(), Instance: "simulated"})
	fm.Flush()

	limit := virtualStart.Add(o.Limit)
	for s.ended.IsZero() {
		if at, ok := stage.Next(); !ok || at.After(limit) {
			break
		}
		stage.Step()
	}
	res := s.result()
	res.WriteSummary(o.Out, o.Color)
	switch {
	case res.Complete:
		return res, nil
	case stage.Now().Before(limit):
		return res, errors.New("the simulated build stopped: nobody had anything left to do")
	}
	return res, fmt.Errorf("the build did not complete within %s of virtual time", o.Limit)
}

// seededIdentity is name's key in the simulation with seed.
func seededIdentity(name string, seed uint64) *agentchat.Identity {
	h := sha256.New()
	binary.Write(h, binary.BigEndian, seed)
	h.Write([]byte(name))
	var k [32]byte
	copy(k[:], h.Sum(nil))
	return agentchat.IdentityFromSeed(name, k)
}
