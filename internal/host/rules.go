package host

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentforeman/foreman/internal/host/receipt"
)

// The core's rules on what passed and what may land, in one place. The
// executors (gitjob, remote, the workers) report what they saw: each
// command's result, the commit a branch holds, whether a commit is in the
// target's history. What that means is decided here, and worded here;
// Config.Rules swaps these for others (a test shows that with rules that
// refuse everything, nothing lands, whatever the executors do).

// Rules decide what passed and what may land.
type Rules interface {
	// Passed says why ev, a run of the checks an executor reports
	// passed, does not show every configured check (checks, each named as
	// checks.Quote names it, in order) passing on its tree; "" when it
	// does.
	Passed(checks []string, ev *receipt.Checks) string
	// MayLand says why the records do not let l land now; "" when they do.
	MayLand(l Landable) string
}

// Landable is a car about to land, and what the records hold of it.
type Landable struct {
	Component, Owner, Ref string
	Tip                   string    // the approved commit its car holds
	Approval              *Approval // its approval on record; nil if none
	LandedAt              string    // the commit that landed Tip before, if the records say one did
	Target                string    // the target branch, for what is said
}

// StrictRules are the rules foreman host runs with.
type StrictRules struct {
	// Namespaces: a car lands only from its builder's namespace
	// (Config.BranchNamespaces).
	Namespaces bool
}

// Passed: every configured check ran and passed, in order; no check
// configured is a pass (what merges cleanly lands, and its receipt says no
// command ran). An executor's word that it passed, without that, is not.
func (StrictRules) Passed(checks []string, ev *receipt.Checks) string {
	if ev == nil {
		return "it says how no check ran"
	}
	var names []string
	for _, c := range ev.Commands {
		if c.Result != "passed" {
			return fmt.Sprintf("it says %s %s", c.Command, orNone(c.Result))
		}
		names = append(names, c.Command)
	}
	if !slices.Equal(names, checks) {
		return fmt.Sprintf("it names %s passed, and the checks are %s", list(names), list(checks))
	}
	return ""
}

// MayLand: the car holds the commit approved, of the builder and ref
// approved, which never landed before.
func (r StrictRules) MayLand(l Landable) string {
	a := l.Approval
	switch {
	case r.Namespaces && !InNamespace(l.Owner, l.Ref):
		return outsideNamespace(l.Owner, l.Ref)
	case a == nil || a.Owner != l.Owner || a.Ref != l.Ref:
		return "no approval of " + l.Owner + "'s " + l.Ref + " is on record"
	case a.Tip == "" || a.Tip != l.Tip:
		return fmt.Sprintf("its car holds %s, and %s was approved", short(l.Tip), short(a.Tip))
	case l.LandedAt != "":
		return fmt.Sprintf("%s landed before, at %s, and %s no longer holds it: it does not land twice (MERGED %s or RELEASE %s decides)",
			short(a.Tip), short(l.LandedAt), l.Target, l.Component, l.Component)
	}
	return ""
}

// InNamespace says whether ref, a branch a READY names (b1/api or
// refs/heads/b1/api), is in builder's namespace: refs/heads/<name>/...,
// name the builder's id without its @. The push gate lets an agent
// update only those refs (remote.GitServer.GrantPush), so a branch outside was
// pushed by someone else: another agent's work, or one it must not be
// credited with.
func InNamespace(builder, ref string) bool {
	name := NamespaceName(builder)
	rest, ok := strings.CutPrefix(strings.TrimPrefix(ref, "refs/heads/"), name+"/")
	return ok && name != "" && rest != ""
}

// Namespace is the branches builder may name: what the refusals say.
func Namespace(builder string) string { return NamespaceName(builder) + "/" }

// NamespaceName is the name builder's branches start with: its id
// without the @. The push gate grants it (remote.GitServer.GrantPush),
// and a builder names its branches with it (foreman agent).
func NamespaceName(builder string) string { return strings.TrimPrefix(builder, "@") }

// outsideNamespace words the refusal of builder's ref.
func outsideNamespace(builder, ref string) string {
	return fmt.Sprintf("the branch %s is outside %s's namespace (host.branch_namespaces): a builder's branches are %s<name>; push the work to %s<component> and READY that",
		ref, builder, Namespace(builder), Namespace(builder))
}

func orNone(s string) string {
	if s == "" {
		return "(no result)"
	}
	return s
}

func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// rules are the rules the core runs with.
func (h *Core) rules() Rules {
	if h.cfg.Rules != nil {
		return h.cfg.Rules
	}
	return StrictRules{Namespaces: h.cfg.BranchNamespaces}
}

// evidenced says why o, a pass an executor reports, does not count (""
// when it does): a tree it says passed before must be on record as
// passed, and a run must show every configured check passing.
func (h *Core) evidenced(o Outcome) string {
	if o.Reused {
		ev, ok := h.trees.get(o.Tree)
		if !ok {
			return "its tree " + short(o.Tree) + " is not on record as passed"
		}
		if why := h.rules().Passed(h.cfg.Checks, &ev); why != "" {
			return "the run on record for its tree " + short(o.Tree) + " does not count: " + why
		}
		return ""
	}
	return h.rules().Passed(h.cfg.Checks, o.Checks)
}
