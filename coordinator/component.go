package coordinator

import (
	"time"

	"github.com/agentforeman/foreman/protocol"
)

// State is where a component is in its life (contract section 4).
type State uint8

// The states. Held freezes a component until an operator decides.
const (
	Pending  State = iota // claimable once its dependencies are merged
	Building              // owned; check-in timer running (also after FIX)
	Blocked               // owned and waiting on a dependency; check-ins still due
	InCI                  // READY seen, CI gating on
	Review                // REVIEW sent, audit timer running
	Merged
	Held // frozen by an escalation: no timers, claims refused
)

var stateNames = [...]string{"pending", "building", "blocked", "ci", "review", "merged", "held"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "unknown"
}

// component is the engine's record of one component.
type component struct {
	name  string
	idx   int // declaration index, also the node in the graph
	state State

	owner    string
	since    time.Time // when owner got it
	unmerged int       // dependencies not merged yet

	// What the current builder reported.
	progress    int
	hasProgress bool
	progressAt  time.Time
	pr          string
	findings    string // details of the last AUDIT FAIL

	// Work in progress (contract section 10), kept across builders.
	branch   string       // the last ref named for c: PROGRESS branch=, or READY's when it is a ref
	overlaps []*component // whose work the host found would conflict with c's, until one is merged

	timer timer // the one deadline running for c, if any

	fails      []attempts // failed audits, per builder
	ciFails    int
	ciConflict int
	barred     []string       // builders that used all their audit attempts
	timedOut   []string       // agents whose claim timed out, until they CLAIM again
	disputes   map[string]int // builder lines from non-owners, per agent; disputed once escalated
	pushback   map[int]int    // BLOCKED count per dependency, reset when UNBLOCKED
	waits      []wait         // what c waits on while blocked
	waiters    []*component   // who waits on c
	hold       protocol.Escalation
	overdue    bool   // audit-overdue escalated for the current review
	approved   bool   // AUDIT PASS seen in merge mode external
	approvedBy string // who said it (shown while approved: the merger's receipts name the auditor)
	left       *trail // what the last builder left, for the next ACK
	mergedFrom string // who built it, once merged
	spent      Cost   // what its builders spent while they held it (spend.go)
}

// attempts counts one builder's failed audits on a component.
type attempts struct {
	agent string
	n     int
}

// disputed marks a dispute that has been escalated: at most once per agent.
const disputed = -1

// wait is one thing a blocked component waits for.
type wait struct {
	on   *component
	kind waitKind
}

type waitKind uint8

const (
	waitDependency waitKind = iota // BLOCKED: until on is merged
	waitFiles                      // CONFLICT files: until on is merged or released
)

// trail is what a builder left behind when c was taken from it, so the next
// builder's ACK can say where to pick up.
type trail struct {
	agent       string
	why         string // TIMEOUT, RETRY, ABORT, RELEASE, ASSIGN
	reason      string // ABORT's reason
	progress    int
	hasProgress bool
	pr          string
	findings    string
	branch      string // the last ref named for c when it left: the next ACK names it
}

// auditFails is how many audits owner has failed on c.
func (c *component) auditFails(agent string) int {
	for _, a := range c.fails {
		if a.agent == agent {
			return a.n
		}
	}
	return 0
}

func (c *component) addAuditFail(agent string) int {
	for i := range c.fails {
		if c.fails[i].agent == agent {
			c.fails[i].n++
			return c.fails[i].n
		}
	}
	c.fails = append(c.fails, attempts{agent, 1})
	return 1
}

func (c *component) clearAuditFails(agent string) {
	for i := range c.fails {
		if c.fails[i].agent == agent {
			c.fails = append(c.fails[:i:i], c.fails[i+1:]...)
			return
		}
	}
}

func (c *component) isBarred(agent string) bool { return contains(c.barred, agent) }

func (c *component) waitsOn(o *component) bool {
	for _, w := range c.waits {
		if w.on == o {
			return true
		}
	}
	return false
}

// owned reports whether c is in someone's hands and not finished.
func (c *component) inProgress() bool { return c.owner != "" && c.state != Merged }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func without(list []string, s string) []string {
	for i, x := range list {
		if x == s {
			return append(list[:i:i], list[i+1:]...)
		}
	}
	return list
}
