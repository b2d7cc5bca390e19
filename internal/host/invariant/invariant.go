// Package invariant is foreman host's promise, checked the one way
// everywhere: every host test ends with it, the live tests check it on a
// real repository, and the host simulator after every step.
//
// Every commit of the target's first-parent line, from where the host
// began, was landed by the host, with a receipt that holds (foreman
// verify: signed, chained, of this repository, once per approval), but
// those the test pushed straight to the target; the commit it lands was
// approved for its component, as the room said (not as the receipt says);
// its tree, or its batch's head's, passed a run of the checks, as the
// checks themselves said; and the target was not rolled back below the
// host's signed head.
package invariant

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentforeman/foreman/internal/verify"
)

// Truth is what the test knows, apart from the receipts: what was
// approved, which trees really passed, what it pushed by hand.
type Truth struct {
	Approved func(component, commit string) bool
	Passed   func(tree string) bool
	ByHand   func(commit string) bool
	// NoBatches: batching is off (host.batch.max 1): every commit's own
	// tree passed, none landed in a batch.
	NoBatches bool
}

// Check verifies o's target and holds it to t: nil when the promise holds,
// else an error naming each commit that breaks it (the first ten).
func Check(ctx context.Context, o verify.Options, t Truth) (verify.Report, error) {
	rep, err := verify.Run(ctx, o)
	if err != nil {
		return rep, err
	}
	var bad []string
	if rep.Rollback != "" {
		bad = append(bad, rep.Rollback)
	}
	if rep.Unanchored != "" && !o.Unanchored {
		bad = append(bad, rep.Unanchored)
	}
	for _, r := range rep.Rows {
		id := short(r.Commit)
		switch {
		case r.Verdict == verify.ByHand && t.ByHand != nil && t.ByHand(r.Commit):
		case r.Verdict != verify.Landed:
			bad = append(bad, fmt.Sprintf("%s holds %s, %s: %s", o.Target, id, r.Verdict, r.Why))
		case t.Approved != nil && !t.Approved(r.Component, r.Approved):
			bad = append(bad, fmt.Sprintf("%s holds %s, which lands %s's %s: never approved", o.Target, id, r.Component, short(r.Approved)))
		case t.NoBatches && r.BatchSize > 1:
			bad = append(bad, fmt.Sprintf("%s holds %s (%s), which landed in a batch of %d (head %s) with batching off: its own tree was never checked",
				o.Target, id, r.Component, r.BatchSize, short(r.Batch)))
		case t.Passed != nil && !t.Passed(r.PassedOn):
			bad = append(bad, fmt.Sprintf("%s holds %s (%s), and no run of the checks passed on tree %s, which its receipt names", o.Target, id, r.Component, short(r.PassedOn)))
		}
	}
	if len(bad) == 0 {
		return rep, nil
	}
	more := ""
	if len(bad) > 10 {
		more = fmt.Sprintf("\n(and %d more)", len(bad)-10)
		bad = bad[:10]
	}
	return rep, fmt.Errorf("%s", strings.Join(bad, "\n")+more)
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
