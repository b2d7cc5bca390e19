// Package verify checks a target branch against foreman host's landing
// receipts (package receipt): for each commit of its first-parent history
// since a given commit, whether foreman landed it (a receipt signed by a
// trusted key names it, its tree passed the checks, it merges the commit
// the auditors approved, on the commit before it, or squashes it there:
// its tree is that merge's, made again here), or it was pushed by hand,
// or its receipt does not hold. It is `foreman verify`.
//
// Nothing here trusts the repository: the keys come from the caller (the
// host's own key, or keys given), never from a receipt; the walk starts
// where the caller says (the host's ledger's first landing), never at the
// oldest receipt found, so deleting receipts cannot shorten it.
package verify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host/receipt"
)

// Options say what to verify and whom to trust.
type Options struct {
	Repo    *gitrepo.Repo
	Target  string        // the branch, short name
	Trusted []receipt.Key // whose receipts count: the host's key, and keys given
	// Since is the commit the walk stops at (not checked itself): the
	// target as it was before the first landing. "" walks to the root.
	Since string
}

// Verdicts of one commit.
const (
	Landed  = "landed"  // by foreman, with a receipt that holds
	ByHand  = "by-hand" // no receipt: not landed by foreman
	Refused = "refused" // a receipt that does not hold
)

// Row is what verify says of one commit of the target.
type Row struct {
	Commit    string `json:"commit"`
	Verdict   string `json:"verdict"`
	Component string `json:"component,omitempty"`
	Builder   string `json:"builder,omitempty"`
	Auditors  string `json:"auditors,omitempty"`
	Signer    string `json:"signer,omitempty"`
	Run       int    `json:"run,omitempty"` // the run whose checks passed on its tree
	Why       string `json:"why,omitempty"` // by hand: who and what; refused: why
	Subject   string `json:"subject"`       // the commit's first line
	Author    string `json:"author"`        // its author
	RanOn     string `json:"ran_on,omitempty"`
	Sandbox   string `json:"sandbox,omitempty"`
	Approved  string `json:"approved,omitempty"`  // the approved commit it merges (or squashes)
	LandedAs  string `json:"landed_as,omitempty"` // merge or squash (host.land_as)
	LandedOn  string `json:"landed_on,omitempty"`
	Tree      string `json:"tree,omitempty"`
	PassedOn  string `json:"passed_on,omitempty"` // the tree whose checks passed
	CheckedAs string `json:"checked_as,omitempty"`
}

// Report is a whole walk, newest commit first.
type Report struct {
	Target string `json:"target"`
	Head   string `json:"head"`
	Since  string `json:"since"`
	Rows   []Row  `json:"commits"`
	Landed int    `json:"landed"`
	ByHand int    `json:"by_hand"`
	Bad    int    `json:"refused"`
}

// OK reports whether every commit since Since is accounted for: landed by
// foreman with a receipt that holds.
func (r Report) OK() bool { return r.ByHand == 0 && r.Bad == 0 }

// Run walks the target and judges each commit.
func Run(ctx context.Context, o Options) (Report, error) {
	if len(o.Trusted) == 0 {
		return Report{}, errors.New("no key to trust: give the host's key (host.identity) or --trust")
	}
	ref := "refs/heads/" + o.Target
	head, err := o.Repo.RevParse(ctx, ref)
	if err != nil || head == "" {
		return Report{}, fmt.Errorf("no branch %s in %s", o.Target, o.Repo.Dir())
	}
	if o.Since != "" {
		since, err := o.Repo.RevParse(ctx, o.Since+"^{commit}")
		if err != nil || since == "" {
			return Report{}, fmt.Errorf("--since %s: no such commit in %s", o.Since, o.Repo.Dir())
		}
		if ok, err := o.Repo.IsAncestor(ctx, since, head); err != nil || !ok {
			return Report{}, fmt.Errorf("--since %s is not in the history of %s", short(since), o.Target)
		}
		o.Since = since
	}
	commits, err := o.Repo.FirstParents(ctx, head, o.Since)
	if err != nil {
		return Report{}, err
	}
	notes, err := o.Repo.Notes(ctx, receipt.NotesRef)
	if err != nil {
		return Report{}, err
	}
	var blobs []string
	for _, c := range commits {
		if b, ok := notes[c.ID]; ok {
			blobs = append(blobs, b)
		}
	}
	data, err := o.Repo.Blobs(ctx, blobs)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Target: o.Target, Head: head, Since: o.Since}
	landedBy := map[string]string{} // approved commit -> the commit that landed it
	// Oldest first, so that "landed before" names the earlier one.
	for i := len(commits) - 1; i >= 0; i-- {
		c := commits[i]
		row := judge(o, c, data[notes[c.ID]], notes[c.ID] != "")
		if row.Verdict == Landed && row.LandedAs == receipt.LandedAsSquash {
			if err := squashedAgain(ctx, o.Repo, &row); err != nil {
				return Report{}, err
			}
		}
		if row.Verdict == Landed {
			if at, ok := landedBy[row.Approved]; ok {
				row.Verdict, row.Why = Refused, fmt.Sprintf("it lands %s (%s), which %s landed before: an approval lands once", short(row.Approved), row.Component, short(at))
			} else {
				landedBy[row.Approved] = c.ID
			}
		}
		switch row.Verdict {
		case Landed:
			rep.Landed++
		case ByHand:
			rep.ByHand++
		default:
			rep.Bad++
		}
		rep.Rows = append(rep.Rows, row)
	}
	slices.Reverse(rep.Rows)
	return rep, nil
}

// squashedAgain makes a squash landing's merge again, of the commit it
// landed on and the approved commit (host.SquashedRef keeps it in the
// host's repository), and refuses the row unless its tree is the commit's.
func squashedAgain(ctx context.Context, repo *gitrepo.Repo, row *Row) error {
	if id, err := repo.RevParse(ctx, row.Approved+"^{commit}"); err != nil || id == "" {
		row.Verdict, row.Why = Refused, fmt.Sprintf("it squashes %s, which is not in this repository, so the squash cannot be made again to compare (fetch refs/foreman/squashed/* from the host's repository)", short(row.Approved))
		return nil
	}
	m, err := repo.MergeTree(ctx, row.LandedOn, row.Approved)
	if err != nil {
		return err
	}
	if !m.Clean() || m.Tree != row.Tree {
		row.Verdict, row.Why = Refused, fmt.Sprintf("it is not the squash of %s on %s: that merge gives tree %s, and it holds %s", short(row.Approved), short(row.LandedOn), short(m.Tree), short(row.Tree))
	}
	return nil
}

// judge says what one commit is.
func judge(o Options, c gitrepo.Commit, note []byte, hasNote bool) Row {
	row := Row{Commit: c.ID, Subject: c.Subject, Author: c.Author, Tree: c.Tree}
	if !hasNote {
		row.Verdict = ByHand
		row.Why = "no receipt: not landed by foreman (pushed by " + c.Author + ")"
		if strings.Contains(c.Subject, ") into "+o.Target) && (strings.HasPrefix(c.Subject, "Merge ") || strings.HasPrefix(c.Subject, "Squash ")) {
			row.Why = "no receipt, though its message reads as foreman host's landing: its note was deleted, or never written"
		}
		return row
	}
	st, signer, err := receipt.Open(note, o.Trusted)
	row.Signer = signer
	if err != nil {
		row.Verdict, row.Why = Refused, "its receipt: "+err.Error()
		return row
	}
	p := st.Predicate
	row.Component, row.Builder, row.Run = p.Component, p.Builder, p.Checks.Run
	row.Auditors = strings.Join(p.Approved.Auditors, ",")
	row.RanOn, row.Sandbox = strings.Join(p.Checks.RanOn, ","), p.Checks.Sandbox
	row.Approved, row.LandedOn, row.PassedOn, row.CheckedAs = p.Approved.Tip, p.LandedOn, p.Checks.Tree, p.Checks.Commit
	row.LandedAs = p.LandedAs
	if row.LandedAs == "" {
		row.LandedAs = receipt.LandedAsMerge // receipts from before there was a choice
	}
	firstParent := ""
	if len(c.Parents) > 0 {
		firstParent = c.Parents[0]
	}
	refuse := func(format string, args ...any) Row {
		row.Verdict, row.Why = Refused, fmt.Sprintf(format, args...)
		return row
	}
	switch {
	case st.Commit() != c.ID || p.Commit != c.ID:
		return refuse("its receipt is about %s, not this commit", short(st.Commit()))
	case st.Tree() != c.Tree || p.Tree != c.Tree:
		return refuse("its receipt names tree %s, and the commit holds %s", short(st.Tree()), short(c.Tree))
	case p.Target != "refs/heads/"+o.Target:
		return refuse("its receipt lands it on %s, not on %s", p.Target, o.Target)
	case p.LandedOn != firstParent:
		return refuse("its receipt says it landed on %s, and its first parent is %s", short(p.LandedOn), short(firstParent))
	case p.Approved.Tip == "":
		return refuse("its receipt names no approved commit")
	case row.LandedAs == receipt.LandedAsMerge && !slices.Contains(c.Parents[1:], p.Approved.Tip):
		return refuse("it does not merge %s, the commit its receipt says was approved", short(p.Approved.Tip))
	case row.LandedAs == receipt.LandedAsSquash && len(c.Parents) != 1:
		return refuse("its receipt says it squashes %s, and it has %d parents", short(p.Approved.Tip), len(c.Parents))
	case row.LandedAs != receipt.LandedAsMerge && row.LandedAs != receipt.LandedAsSquash:
		return refuse("its receipt says it landed as %q, neither merge nor squash", p.LandedAs)
	case p.Checks.Tree != c.Tree:
		return refuse("the checks its receipt names passed on tree %s, not on its own %s", short(p.Checks.Tree), short(c.Tree))
	case !p.Checks.Passed():
		return refuse("not every check its receipt names passed")
	}
	row.Verdict = Landed
	return row
}

func short(oid string) string {
	if len(oid) > 12 {
		return oid[:12]
	}
	if oid == "" {
		return "(none)"
	}
	return oid
}

// Table writes the report for people: a line per commit, then the sum.
func (r Report) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-12s  %-8s  %-12s  %s\n", "COMMIT", "VERDICT", "COMPONENT", "DETAIL")
	for _, row := range r.Rows {
		detail := row.Why
		if row.Verdict == Landed {
			by := row.Auditors
			if by == "" {
				by = "(auditors not known to the host)"
			}
			how := ""
			if row.LandedAs == receipt.LandedAsSquash {
				how = ", squashed"
			}
			detail = fmt.Sprintf("approved %s by %s%s; run %d passed on %s (%s, sandbox %s); signed %s",
				short(row.Approved), by, how, row.Run, short(row.PassedOn), row.RanOn, shortDigest(row.Sandbox), row.Signer)
		}
		comp := row.Component
		if comp == "" {
			comp = "-"
		}
		fmt.Fprintf(&b, "%-12s  %-8s  %-12s  %s\n", short(row.Commit), row.Verdict, comp, detail)
	}
	since := short(r.Since)
	if r.Since == "" {
		since = "the root"
	}
	fmt.Fprintf(&b, "%s at %s since %s: %d commits, %d landed by foreman, %d not landed by foreman, %d receipts refused\n",
		r.Target, short(r.Head), since, len(r.Rows), r.Landed, r.ByHand, r.Bad)
	return b.String()
}

func shortDigest(d string) string {
	if rest, ok := strings.CutPrefix(d, "sha256:"); ok && len(rest) > 12 {
		return "sha256:" + rest[:12]
	}
	return d
}
