package sim

import (
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
}

func newCI(s CI) *ciBot {
	if s.Delay <= 0 {
		s.Delay = 2 * time.Minute
	}
	return &ciBot{s: s, done: map[string]int{}}
}

func (c *ciBot) start(world) {}

func (c *ciBot) coordinator(world, reply) {}

// agent watches builders' READY lines: that is when CI runs on a PR.
func (c *ciBot) agent(w world, _ string, text string) {
	cmd, err := protocol.Read(text)
	if err != nil || cmd.Verb != protocol.Ready {
		return
	}
	comp := cmd.Component
	verdict := nextVerdict(c.s.Fail[comp], c.done, comp)
	w.after(spread(w, c.s.Delay), func() { w.say(line("CI", comp, verdict)) })
}
