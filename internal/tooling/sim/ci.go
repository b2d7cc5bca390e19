package sim

import (
	"slices"
	"strings"
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// CI scripts a CI bot, for builds with ci_gating on: on a builder's READY it
// reports CI after Delay (give or take a tenth), PASS unless Fail has
// details left for the component.
type CI struct {
	Delay time.Duration
	Fail  map[string][]string // per component, the details of the runs it fails, in order
}

type ciBot struct {
	s    CI
	done map[string]int
	// owed are the READYs said before the bot joined that no CI verdict
	// answered and foreman has not moved on since, in order: a CI bot
	// started late, or again, runs them.
	owed []string
}

func newCI(s CI) *ciBot {
	if s.Delay <= 0 {
		s.Delay = 2 * time.Minute
	}
	return &ciBot{s: s, done: map[string]int{}}
}

// start runs the checks owed from before the bot came.
func (c *ciBot) start(w world) {
	for _, comp := range c.owed {
		c.run(w, comp)
	}
	c.owed = nil
}

func (c *ciBot) coordinator(world, reply) {}

// catchUp: a line of foreman's about c, but STATUS, takes c out of CI
// (REVIEW after a verdict, FIX, TIMEOUT, TASKS, an operator's command).
func (c *ciBot) catchUp(r reply) {
	switch r.Verb {
	case protocol.ReplyStatus:
	case protocol.ReplyTasks:
		for _, comp := range r.List {
			c.settle(comp)
		}
	case protocol.ReplyOK: // OK <command> <c> ...
		comp, _ := word(r.Rest)
		c.settle(comp)
	default:
		c.settle(r.C)
	}
}

// catchUpAgent follows builders' READY lines and others' verdicts.
func (c *ciBot) catchUpAgent(_, text string) {
	cmd, err := protocol.Read(strings.TrimSpace(text))
	if err != nil {
		return
	}
	switch cmd.Verb {
	case protocol.Ready:
		c.settle(cmd.Component)
		c.owed = append(c.owed, cmd.Component)
	case protocol.CI:
		c.settle(cmd.Component)
	}
}

func (c *ciBot) settle(comp string) {
	c.owed = slices.DeleteFunc(c.owed, func(o string) bool { return o == comp })
}

// agent watches builders' READY lines: that is when CI runs on a PR.
func (c *ciBot) agent(w world, _ string, text string) {
	cmd, err := protocol.Read(text)
	if err != nil || cmd.Verb != protocol.Ready {
		return
	}
	c.run(w, cmd.Component)
}

// run reports a verdict on comp after Delay.
func (c *ciBot) run(w world, comp string) {
	verdict := nextVerdict(c.s.Fail[comp], c.done, comp)
	w.after(spread(w, c.s.Delay), func() { w.say(line("CI", comp, verdict)) })
}
