package host

import "fmt"

// Flakes are learned per check command, from what the host saw of it on
// identical trees: each time it failed on a tree, and whether that tree
// later passed it (a retry on the same tree, host.retries; or a later run
// whose tree was the same: a READY checked again, a car whose chain came
// out as that tree). A command whose failures passed again more than
// host.flaky_threshold of the time, once it failed minFlakeFailures
// times, is flaky: its failure is tried again, on the same tree, up to
// maxFlakeRetries times before anyone is blamed, and the board says so.
// What is learned lives as long as the host's process (a restart learns
// again); a tree is remembered as failed for the last maxFailedTrees.
const (
	minFlakeFailures = 3
	maxFlakeRetries  = 2
	maxFailedTrees   = 512
)

// flakeStats is what the host saw of one command.
type flakeStats struct {
	failed      int // its failures, each on a tree
	passedAgain int // of those, failures whose tree later passed
}

// failedTree is a tree a command failed on, not yet seen to pass.
type failedTree struct {
	command string
	counted bool // seen to pass since: counted once
}

// FlakyCommand is a command's history, as the board shows it.
type FlakyCommand struct {
	Command     string `json:"command"`
	Failed      int    `json:"failed"`       // failures seen
	PassedAgain int    `json:"passed_again"` // of them, on a tree that later passed
	Flaky       bool   `json:"flaky"`        // retried before blame
}

func (h *Core) stats(cmd string) *flakeStats {
	s := h.flakes[cmd]
	if s == nil {
		if len(h.flakes) >= maxFlakeCommands {
			return &flakeStats{} // bounded: a command past the bound is not learned
		}
		s = &flakeStats{}
		h.flakes[cmd] = s
	}
	return s
}

// maxFlakeCommands bounds the commands learned (host.checks is short;
// a command's name comes from what the checks said).
const maxFlakeCommands = 256

// learn takes what a finished check says of its commands: the ones that
// failed and then passed on the same tree (Flaky), the one that failed
// (Failed), and a tree that passed, which was maybe failed before.
func (h *Core) learn(o Outcome) {
	for _, cmd := range o.Flaky {
		h.flaky[cmd]++
		s := h.stats(cmd)
		s.failed++
		s.passedAgain++
	}
	switch {
	case o.Result == Failed && o.Command != "" && o.NotRun == "": // a command that never ran says nothing of itself
		h.stats(o.Command).failed++
		if o.Tree != "" {
			if _, ok := h.failedTrees.get(o.Tree); !ok {
				h.failedTrees.put(o.Tree, &failedTree{command: o.Command})
			}
		}
	case o.Result == Passed && o.Tree != "":
		if f, ok := h.failedTrees.get(o.Tree); ok && !f.counted {
			f.counted = true
			h.stats(f.command).passedAgain++
		}
	}
}

// isFlaky reports whether cmd's failures are to be tried again before
// anyone is blamed.
func (h *Core) isFlaky(cmd string) bool {
	s, ok := h.flakes[cmd]
	if !ok || s.failed < minFlakeFailures || h.cfg.FlakyThreshold <= 0 {
		return false
	}
	return float64(s.passedAgain)/float64(s.failed) > h.cfg.FlakyThreshold
}

// flakeRetry says whether a failure of o's command is tried again before
// it is reported (it is flaky, and this job was tried again fewer than
// maxFlakeRetries times), and says so in the room once per try. A failure
// seen again on the same tree (host.retries, or an earlier run: seen
// counts each) is tried again once only: failing twice in a row is what a
// flake rarely does, and what a real failure always does, and each try
// makes the train wait (a batch's bisection waits for each of its
// failures).
func (h *Core) flakeRetry(name string, tries, seen int, o Outcome) bool {
	limit := maxFlakeRetries
	if seen > 1 {
		limit = 1
	}
	if o.Result != Failed || !h.isFlaky(o.Command) || tries >= limit {
		return false
	}
	s := h.flakes[o.Command]
	h.say(fmt.Sprintf("queue: %s failed on %s, and it is flaky (%d of its %d failures passed again on the same tree): checking %s again before blaming anyone (%d of %d)",
		o.Command, name, s.passedAgain, s.failed, name, tries+1, limit))
	return true
}

// flakyView is every command's history, for the board.
func (h *Core) flakyView() []FlakyCommand {
	var out []FlakyCommand
	for cmd, s := range h.flakes {
		out = append(out, FlakyCommand{Command: cmd, Failed: s.failed, PassedAgain: s.passedAgain, Flaky: h.isFlaky(cmd)})
	}
	return out
}
