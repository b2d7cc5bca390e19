// Package verify checks a target branch against foreman host's landing
// receipts (package receipt): for each commit of its first-parent history
// since a given commit, whether foreman landed it (a receipt signed by a
// trusted key names it, its tree passed the checks, it merges the commit
// the auditors approved, on the commit before it, or squashes it there:
// its tree is that merge's, made again here), or it was pushed by hand,
// or its receipt does not hold. It is `foreman verify`.
//
// A batch (several components landed by one move of the target) is
// checked as one: its commits below the head were never checked alone,
// so each is accepted on the head's checks only if the whole batch is on
// the target, in its order, under that head, and every receipt of it
// holds.
//
// Nothing here trusts the repository: the keys come from the caller (the
// host's own key, or keys given), never from a receipt; the walk starts
// where the caller says (the host's ledger's first landing), never at the
// oldest receipt found, so deleting receipts cannot shorten it.
package verify

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host/receipt"
	"github.com/agentforeman/foreman/protocol"
)

// Repository is what verify reads of a repository: *gitrepo.Repo, or a
// simulated one (the host simulator checks its landings with Check).
type Repository interface {
	Dir() string
	RevParse(ctx context.Context, name string) (string, error)
	IsAncestor(ctx context.Context, a, b string) (bool, error)
	FirstParents(ctx context.Context, head, since string) ([]gitrepo.Commit, error)
	Notes(ctx context.Context, ref string) (map[string]string, error)
	Blobs(ctx context.Context, ids []string) (map[string][]byte, error)
	MergeTree(ctx context.Context, ours, theirs string) (gitrepo.Merge, error)
	Refs(ctx context.Context, prefix string) (map[string]string, error)
}

// Options say what to verify and whom to trust.
type Options struct {
	Repo    Repository
	Target  string        // the branch, short name
	Trusted []receipt.Key // whose receipts count: the host's key, and keys given
	// Repository is the repository's name the receipts must give
	// (host.repository): never taken from the history checked.
	Repository string
	// Since is the commit the walk stops at (not checked itself), the
	// caller's override; "" stops where the chain of receipts began, as
	// its first landing's receipt says (signed).
	Since string
	// State is the file that keeps the newest landing verify accepted for
	// this repository and target (as a TUF client keeps the last
	// timestamp): a target below it was rolled back. "" keeps none.
	State string
	// MaxAge is how old the host's signed head may be and still anchor the
	// newest landing (default DefaultMaxAge).
	MaxAge time.Duration
	// Now is the verifier's time (default time.Now()).
	Now time.Time
	// Unanchored accepts a history whose newest landing neither State nor
	// a fresh signed head anchors: rollback is then not checked, and the
	// report says so.
	Unanchored bool
	// Cache keeps the receipts opened, by their blob's id, for a caller
	// that verifies the same repository again and again with the same
	// trusted keys (the host simulator, after every step). Nil: none.
	Cache *Cache
}

// Cache is receipts opened before, by blob id (a blob's id is its
// content's hash, so a receipt changed is another blob).
type Cache struct {
	m     map[string]*opened
	heads map[string]openedHead
}

type openedHead struct {
	h   receipt.Head
	err error
}

// NewCache makes an empty cache.
func NewCache() *Cache { return &Cache{m: map[string]*opened{}, heads: map[string]openedHead{}} }

// DefaultMaxAge is how old a signed head may be by default: the host signs
// its head at least hourly, so one a day old means the host is stopped, or
// the target is frozen.
const DefaultMaxAge = 24 * time.Hour

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
	Batch     string `json:"batch,omitempty"`      // the head of the batch it landed in, if it did
	BatchSize int    `json:"batch_size,omitempty"` // how many commits that batch landed
	Seq       int    `json:"seq,omitempty"`        // its place in the chain of receipts (0: a receipt of version 1)
	// ChecksChanged: the files that define the checks it changed, as its
	// receipt says (checksChanged): it was checked by them as it brings them.
	ChecksChanged []string `json:"checks_changed,omitempty"`
	// Cost: what foreman counted the component had cost, as its receipt
	// says ("$1.25 and 3000 tokens"); empty when the receipt says nothing
	// (one from before receipts said it, or foreman counted none).
	Cost string `json:"cost,omitempty"`

	batch *receipt.Batch // as its receipt says, for batches to check across rows
	rc    *opened        // its receipt, opened
}

// Report is a whole walk, newest commit first.
type Report struct {
	Target     string `json:"target"`
	Repository string `json:"repository"`
	Head       string `json:"head"`
	Since      string `json:"since"`
	Rows       []Row  `json:"commits"`
	Landed     int    `json:"landed"`
	ByHand     int    `json:"by_hand"`
	Bad        int    `json:"refused"`
	// Newest is the newest landing of the chain of receipts on the target
	// (Seq 0: none).
	Newest receipt.Link `json:"newest"`
	// Anchors say what vouches that Newest is the newest landing there is:
	// the host's signed head, fresh, and the state file.
	Anchors []string `json:"anchors,omitempty"`
	// Rollback says why the target is refused as rolled back, or frozen,
	// and the landings lost.
	Rollback string `json:"rollback,omitempty"`
	// Unanchored says that nothing anchors Newest, so rollback was not
	// checked, and why; UnanchoredOK that the caller accepted that.
	Unanchored   string `json:"unanchored,omitempty"`
	UnanchoredOK bool   `json:"unanchored_accepted,omitempty"`
}

// OK reports whether every commit since Since is accounted for (landed by
// foreman with a receipt that holds), and the target was not rolled back:
// checked, or the caller accepted that it could not be.
func (r Report) OK() bool {
	return r.ByHand == 0 && r.Bad == 0 && r.Rollback == "" && (r.Unanchored == "" || r.UnanchoredOK)
}

// Run walks the target and judges each commit, then the chain of their
// receipts, and checks the newest landing against what anchors it.
func Run(ctx context.Context, o Options) (Report, error) {
	if len(o.Trusted) == 0 {
		return Report{}, errors.New("no key to trust: give the host's key (host.identity) or --trust")
	}
	if o.Repository == "" {
		return Report{}, errors.New("no repository name to expect: set host.repository, or give --repository")
	}
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	st, err := readState(o)
	if err != nil {
		return Report{}, err
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
	// The whole first-parent line: where the chain began is found on it,
	// and what anchors the newest landing may lie below --since.
	line, err := o.Repo.FirstParents(ctx, head, "")
	if err != nil {
		return Report{}, err
	}
	slices.Reverse(line) // oldest first, so that "landed before" names the earlier one
	rcs, err := openAll(ctx, o, line)
	if err != nil {
		return Report{}, err
	}
	from, err := walkFrom(o, line, rcs)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Target: o.Target, Repository: o.Repository, Head: head}
	if from > 0 {
		rep.Since = line[from-1].ID
	}
	var rows []Row
	for _, c := range line[from:] {
		row := judge(o, c, rcs[c.ID])
		if row.Verdict == Landed && row.LandedAs == receipt.LandedAsSquash {
			if err := squashedAgain(ctx, o.Repo, &row); err != nil {
				return Report{}, err
			}
		}
		rows = append(rows, row)
	}
	chains(o, rows, o.Since == "")
	batches(o, rows)
	landsOnce(rows)
	for _, row := range rows {
		switch row.Verdict {
		case Landed:
			rep.Landed++
		case ByHand:
			rep.ByHand++
		default:
			rep.Bad++
		}
	}
	if err := anchor(ctx, o, &rep, line, rcs, st); err != nil {
		return Report{}, err
	}
	slices.Reverse(rows)
	rep.Rows = rows
	if rep.OK() && o.State != "" && rep.Newest.Seq > 0 {
		if err := writeState(ctx, o, rep, line, rcs, st); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// opened is a receipt as read from a commit's note: its statement, if it
// holds (signed by a trusted key), who signed it, and its digest, which
// the next landing of its chain names it by.
type opened struct {
	st     receipt.Statement
	signer string
	err    error
	digest string
}

// chained reports whether the receipt opened, is of version 2 and names
// the repository expected.
func (x *opened) chained(o Options) bool {
	return x != nil && x.err == nil && x.st.Predicate.Chain != nil && x.st.Predicate.Repository == o.Repository
}

// openAll reads and opens the receipt of every commit of line that has
// one, through one git cat-file.
func openAll(ctx context.Context, o Options, line []gitrepo.Commit) (map[string]*opened, error) {
	notes, err := o.Repo.Notes(ctx, receipt.NotesRef)
	if err != nil {
		return nil, err
	}
	var blobs []string
	for _, c := range line {
		if b, ok := notes[c.ID]; ok && (o.Cache == nil || o.Cache.m[b] == nil) {
			blobs = append(blobs, b)
		}
	}
	data, err := o.Repo.Blobs(ctx, blobs)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*opened, len(notes))
	for _, c := range line {
		b, ok := notes[c.ID]
		if !ok {
			continue
		}
		if o.Cache != nil && o.Cache.m[b] != nil {
			out[c.ID] = o.Cache.m[b]
			continue
		}
		note := data[b]
		x := &opened{digest: receipt.StatementDigest(note)}
		x.st, x.signer, x.err = receipt.Open(note, o.Trusted)
		out[c.ID] = x
		if o.Cache != nil {
			o.Cache.m[b] = x
		}
	}
	return out, nil
}

// walkFrom is where the walk begins on line (oldest first): after Since,
// or after where the chain of receipts began, as its first landing's
// receipt says, signed, never from anything unsigned. A chain that began
// twice begins at the first (the second is refused by chains).
func walkFrom(o Options, line []gitrepo.Commit, rcs map[string]*opened) (int, error) {
	at := make(map[string]int, len(line))
	for i, c := range line {
		at[c.ID] = i
	}
	if o.Since != "" {
		i, ok := at[o.Since]
		if !ok {
			return 0, fmt.Errorf("--since %s is not on %s's first-parent line", short(o.Since), o.Target)
		}
		return i + 1, nil
	}
	chainedAt := -1
	for i, c := range line {
		x := rcs[c.ID]
		if !x.chained(o) {
			continue
		}
		if chainedAt < 0 {
			chainedAt = i
		}
		if ch := x.st.Predicate.Chain; ch.Seq == 1 {
			s, ok := at[ch.Start]
			if !ok || s >= i {
				return 0, fmt.Errorf("the chain of receipts on %s begins at %s (its first landing, %s), which is not on its first-parent line below that landing: the history was rewritten; give --since <commit> to check it from there",
					o.Target, short(ch.Start), short(c.ID))
			}
			return s + 1, nil
		}
	}
	if chainedAt >= 0 {
		return 0, fmt.Errorf("%s holds receipts of a chain (the oldest, %s, is landing %d) whose first landing is not on it: the history below was rewritten; give --since <commit> to check it from there",
			o.Target, short(line[chainedAt].ID), rcs[line[chainedAt].ID].st.Predicate.Chain.Seq)
	}
	return 0, fmt.Errorf("%s holds no chain of receipts for repository %s (none, receipts of hosts from before chains, or of another host.repository), so nothing signed says where to start; give --since <the target before the first landing>",
		o.Target, o.Repository)
}

// landsOnce refuses a landing of an approval that an earlier commit
// landed (rows are oldest first, so the earlier one is named): an
// approval lands once. A batch, which batches left whole, is taken as
// one: if one of its commits lands again what was landed, none of them
// is accepted, and none of their approvals counts as landed.
func landsOnce(rows []Row) {
	landedBy := map[string]string{} // approved commit -> the commit that landed it
	for i := 0; i < len(rows); {
		n := 1
		if rows[i].Verdict == Landed && rows[i].BatchSize > 1 {
			n = min(rows[i].BatchSize, len(rows)-i) // its first commit: the rest are next
		}
		unit := rows[i : i+n]
		i += n
		if unit[0].Verdict != Landed {
			continue
		}
		landing := map[string]string{}
		bad, why := -1, ""
		for j, r := range unit {
			at, ok := landedBy[r.Approved]
			if !ok {
				at, ok = landing[r.Approved]
			}
			if ok {
				bad, why = j, fmt.Sprintf("it lands %s (%s), which %s landed before: an approval lands once", short(r.Approved), r.Component, short(at))
				break
			}
			landing[r.Approved] = r.Commit
		}
		if bad < 0 {
			maps.Copy(landedBy, landing)
			continue
		}
		members := make([]int, len(unit))
		for j := range members {
			members[j] = j
		}
		refuseBatch(unit, members, bad, why)
	}
}

// batches checks, across the rows (oldest first), the batches their
// receipts name. judge saw each commit alone, and a commit below a
// batch's head was accepted on the head's checks, which hold for it only
// if the whole batch is on the target as one, under that head, and every
// commit of it has a receipt that holds and names the same batch. A batch
// lands as one: if one of its commits does not hold, none is accepted.
func batches(o Options, rows []Row) {
	if !slices.ContainsFunc(rows, func(r Row) bool { return r.batch != nil }) {
		return // no batch: nothing to check across rows
	}
	at := make(map[string]int, len(rows)) // commit -> its row
	for i, r := range rows {
		at[r.Commit] = i
	}
	for _, g := range batchGroups(rows, at) {
		if bad, why := batchFault(o, rows, g, at); why != "" {
			refuseBatch(rows, g, bad, why)
		}
	}
}

// batchGroups gathers the rows that receipts tie together in batches: a
// row whose receipt names a batch, with every row of that batch, and so
// on, so that a batch whose receipts disagree is still one group. Each
// group is oldest first.
func batchGroups(rows []Row, at map[string]int) [][]int {
	up := make([]int, len(rows))
	for i := range up {
		up[i] = i
	}
	root := func(i int) int {
		for up[i] != i {
			up[i] = up[up[i]]
			i = up[i]
		}
		return i
	}
	for i, r := range rows {
		if r.batch == nil {
			continue
		}
		for _, id := range r.batch.Commits {
			if j, ok := at[id]; ok {
				up[root(j)] = root(i)
			}
		}
	}
	byRoot := map[int][]int{}
	var roots []int
	for i := range rows {
		k := root(i)
		if _, ok := byRoot[k]; !ok {
			roots = append(roots, k)
		}
		byRoot[k] = append(byRoot[k], i)
	}
	var groups [][]int
	for _, k := range roots {
		g := byRoot[k]
		if slices.ContainsFunc(g, func(i int) bool { return rows[i].batch != nil }) {
			groups = append(groups, g)
		}
	}
	return groups
}

// batchFault says which row of a batch's group (g, oldest first) does
// not hold, and why; "" when every one does. A receipt that does not
// hold alone, or names another batch, is named before the batch's place
// on the target, as the more telling reason. The batch is as the newest
// receipt that names one says: the head's, whose tree passed, when it
// does.
func batchFault(o Options, rows []Row, g []int, at map[string]int) (int, string) {
	ref := g[0]
	for _, i := range g {
		if rows[i].batch != nil {
			ref = i
		}
	}
	b := rows[ref].batch
	for _, i := range g {
		r := rows[i]
		switch {
		case r.Verdict != Landed:
			return i, r.Why
		case r.batch == nil:
			return i, fmt.Sprintf("its receipt names no batch, and %s's says it landed in the batch whose head is %s", short(rows[ref].Commit), short(b.Head))
		case !sameBatch(r, rows[ref]):
			return i, fmt.Sprintf("its receipt names a batch (head %s, %d commits, run %d) other than %s's (head %s, %d commits, run %d)",
				short(r.Batch), r.BatchSize, r.Run, short(rows[ref].Commit), short(b.Head), len(b.Commits), rows[ref].Run)
		}
	}
	for _, i := range g {
		if why := onTarget(o, rows, i, at); why != "" {
			return i, why
		}
	}
	return 0, ""
}

// sameBatch reports whether two rows' receipts name the same batch, and
// the same run of the checks on its head.
func sameBatch(a, b Row) bool {
	return a.batch.Head == b.batch.Head && slices.Equal(a.batch.Commits, b.batch.Commits) &&
		a.Run == b.Run && a.PassedOn == b.PassedOn && a.CheckedAs == b.CheckedAs
}

// onTarget says why the batch row i's receipt names is not on the walk
// as one: its commits next to each other, oldest first, the head last,
// the head's tree the one its checks passed on; "" if it is.
func onTarget(o Options, rows []Row, i int, at map[string]int) string {
	b := rows[i].batch
	h, ok := at[b.Head]
	if !ok || h < i {
		return fmt.Sprintf("its receipt says it landed in a batch whose head %s is not on %s above it", short(b.Head), o.Target)
	}
	first := i - slices.Index(b.Commits, rows[i].Commit) // where the batch starts in the walk
	for j, id := range b.Commits {
		pos := first + j
		if pos < 0 {
			continue // below where the walk starts: said below
		}
		if pos >= len(rows) || rows[pos].Commit != id {
			there := o.Target + " ends before it"
			if pos < len(rows) {
				there = fmt.Sprintf("%s holds %s there", o.Target, short(rows[pos].Commit))
			}
			return fmt.Sprintf("the batch its receipt names is not on %s as one: its commit %d of %d is %s, and %s", o.Target, j+1, len(b.Commits), short(id), there)
		}
	}
	if first < 0 && o.Since != "" {
		return fmt.Sprintf("--since %s cuts through its batch: %d of its %d commits are not after it, so the batch cannot be checked as one; verify from before the batch", short(o.Since), -first, len(b.Commits))
	}
	if first < 0 {
		return fmt.Sprintf("the batch its receipt names is not on %s as one: its first %d commits would be below the root", o.Target, -first)
	}
	if rows[h].Tree != rows[i].PassedOn {
		return fmt.Sprintf("its batch's head %s holds tree %s, and the checks passed on %s", short(b.Head), short(rows[h].Tree), short(rows[i].PassedOn))
	}
	return ""
}

// refuseBatch refuses every commit of a batch (members, rows of rows)
// because one of them, bad, does not hold (why): a batch lands as one.
// A commit refused already keeps its own reason.
func refuseBatch(rows []Row, members []int, bad int, why string) {
	head := rows[bad].Batch // for a row whose receipt names none
	for _, m := range members {
		head = cmp.Or(head, rows[m].Batch)
	}
	for _, m := range members {
		r := &rows[m]
		switch {
		case r.Verdict != Landed:
		case m == bad:
			r.Verdict, r.Why = Refused, why
		default:
			r.Verdict, r.Why = Refused, fmt.Sprintf("its batch (head %s) does not hold: %s: %s", short(cmp.Or(r.Batch, head)), short(rows[bad].Commit), why)
		}
	}
}

// squashedAgain makes a squash landing's merge again, of the commit it
// landed on and the approved commit (host.SquashedRef keeps it in the
// host's repository), and refuses the row unless its tree is the commit's.
func squashedAgain(ctx context.Context, repo Repository, row *Row) error {
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
func judge(o Options, c gitrepo.Commit, x *opened) Row {
	row := Row{Commit: c.ID, Subject: c.Subject, Author: c.Author, Tree: c.Tree, rc: x}
	if x == nil {
		row.Verdict = ByHand
		row.Why = "no receipt: not landed by foreman (author " + c.Author + ")" // who wrote it, not who pushed it: git does not know that
		if strings.Contains(c.Subject, ") into "+o.Target) && (strings.HasPrefix(c.Subject, "Merge ") || strings.HasPrefix(c.Subject, "Squash ")) {
			row.Why = "no receipt, though its message reads as foreman host's landing: its note was deleted, or never written"
		}
		return row
	}
	st, signer, err := x.st, x.signer, x.err
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
	row.ChecksChanged = p.ChecksChanged
	row.Cost = costText(p.Cost)
	if p.Batch != nil {
		row.Batch, row.BatchSize, row.batch = p.Batch.Head, len(p.Batch.Commits), p.Batch
	}
	if p.Chain != nil {
		row.Seq = p.Chain.Seq
	}
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
	case p.Repository != "" && p.Repository != o.Repository:
		return refuse("its receipt lands it in repository %s, not in %s (host.repository)", p.Repository, o.Repository)
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
	case p.Batch != nil && !slices.Contains(p.Batch.Commits, c.ID):
		return refuse("its receipt says it landed in a batch (head %s) that does not list it", short(p.Batch.Head))
	case p.Batch != nil && p.Batch.Commits[len(p.Batch.Commits)-1] != p.Batch.Head:
		return refuse("its receipt names a batch whose head %s is not its last commit", short(p.Batch.Head))
	case p.Checks.Tree != c.Tree && (p.Batch == nil || p.Batch.Head == c.ID):
		// A commit below a batch's head was not checked alone: batches
		// holds it to the head's tree instead.
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

// costText says a receipt's cost, or "" when it has none; a cost that is
// not a decimal is said to be so, never shown as it came.
func costText(c *receipt.Cost) string {
	if c == nil {
		return ""
	}
	if _, ok := protocol.ParseUSD(c.USD); !ok || c.Tokens < 0 {
		return "(not readable)"
	}
	return fmt.Sprintf("$%s and %d tokens", c.USD, c.Tokens)
}

// subjectWidth is the table's room for a commit's subject: a longer one
// is cut (--json gives it whole).
const subjectWidth = 40

// subject is a commit's first line as the table shows it.
func subject(s string) string {
	r := []rune(s)
	if len(r) > subjectWidth {
		return string(r[:subjectWidth-1]) + "…"
	}
	return s
}

// Table writes the report for people: a line per commit, its subject
// included, then the sum.
func (r Report) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-12s  %-8s  %-12s  %-*s  %s\n", "COMMIT", "VERDICT", "COMPONENT", subjectWidth, "SUBJECT", "DETAIL")
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
			batch := ""
			if row.Batch != "" {
				batch = fmt.Sprintf(", in a batch of %d whose head is %s", row.BatchSize, short(row.Batch))
			}
			detail = fmt.Sprintf("approved %s by %s%s; run %d passed on %s (%s, sandbox %s)%s; signed %s",
				short(row.Approved), by, how, row.Run, short(row.PassedOn), row.RanOn, shortDigest(row.Sandbox), batch, row.Signer)
		}
		if row.Verdict == Landed && row.Cost != "" {
			detail += "; cost " + row.Cost
		}
		if row.Verdict == Landed && len(row.ChecksChanged) > 0 {
			detail += "; changed the checks (" + strings.Join(row.ChecksChanged, ", ") + ")"
		}
		comp := row.Component
		if comp == "" {
			comp = "-"
		}
		fmt.Fprintf(&b, "%-12s  %-8s  %-12s  %-*s  %s\n", short(row.Commit), row.Verdict, comp, subjectWidth, subject(row.Subject), detail)
	}
	since := short(r.Since)
	if r.Since == "" {
		since = "the root"
	}
	fmt.Fprintf(&b, "%s at %s since %s: %d commits, %d landed by foreman, %d not landed by foreman, %d receipts refused\n",
		r.Target, short(r.Head), since, len(r.Rows), r.Landed, r.ByHand, r.Bad)
	switch {
	case r.Rollback != "":
		fmt.Fprintf(&b, "REFUSED: %s\n", r.Rollback)
	case r.Unanchored != "" && r.UnanchoredOK:
		fmt.Fprintf(&b, "newest landing %d (%s); %s (accepted: --unanchored)\n", r.Newest.Seq, short(r.Newest.Commit), r.Unanchored)
	case r.Unanchored != "":
		fmt.Fprintf(&b, "NOT CHECKED: newest landing %d (%s); %s. Give --state FILE to keep what verify accepted, run it while the host signs its head (hourly), or --unanchored to accept this\n",
			r.Newest.Seq, short(r.Newest.Commit), r.Unanchored)
	default:
		fmt.Fprintf(&b, "newest landing %d (%s), not rolled back: anchored by %s\n", r.Newest.Seq, short(r.Newest.Commit), strings.Join(r.Anchors, ", and "))
	}
	return b.String()
}

func shortDigest(d string) string {
	if rest, ok := strings.CutPrefix(d, "sha256:"); ok && len(rest) > 12 {
		return "sha256:" + rest[:12]
	}
	return d
}
