package host

import (
	"slices"

	"github.com/agentforeman/foreman/internal/host/receipt"
)

// Kind is what a job does.
type Kind uint8

const (
	// Check checks a builder's ref: validate, merge with the target
	// (rebasing if it conflicts and auto_rebase is on), run the checks on
	// the merge result.
	Check Kind = iota + 1
	// Car checks an approved component where it will land: on the target
	// merged with every car ahead of it in the train (speculatively: those
	// may still fail), then with its own approved commit. See train.go.
	Car
	// Land moves the target, by compare-and-swap, from Base to Commit: a
	// car's chain head whose check, and every check ahead of it, passed.
	// It runs no check and takes no slot.
	Land
	// Scan merges Ref with each of Others (work in progress, contract
	// section 10) and says which would conflict. No slot.
	Scan
	// Pin keeps what Ref (a departed builder's branch) held as
	// refs/foreman/handoff/<c>/<n>. No slot.
	Pin
	// Note keeps Receipt as the note of Commit (refs/notes/foreman) if
	// Commit is on the target: a landing whose note a stop or a crash cut
	// off. No slot.
	Note
	// Head keeps Receipt, the host's signed head (receipt.HeadStatement)
	// naming Commit, the newest landing, at receipt.HeadRef. No slot.
	Head
)

func (k Kind) String() string {
	switch k {
	case Check:
		return "check"
	case Car:
		return "car"
	case Land:
		return "land"
	case Scan:
		return "scan"
	case Pin:
		return "pin"
	case Note:
		return "note"
	case Head:
		return "head"
	}
	return "?"
}

// Job is one unit of git work the core asks the shell for.
type Job struct {
	Run       int // unique for the host's life, across restarts
	Kind      Kind
	Component string
	Ref       string // what the builder's READY named
	Owner     string
	Pass      *Pass // Car: what passed CI for this component, if the host knows

	// Check: a shared check (host.batch.max): the READYs of Ahead (tips
	// not known: their refs now) merged with the target in order, then
	// this one's; one run of the checks on the last merge vouches for
	// all. With OnTrain, they are merged not with the target but where
	// they would land: Base merged with each of OnTrain's tips (the
	// train's chain: what landed since Base, then every car). Its
	// Outcome.Chain says each merge, OnTrain's first.
	// Car: the chain is Base merged with each of Ahead's tips in order,
	// then with Tip (the approved commit; "" when no check ever found it:
	// then Ref's commit now). Every merge the host makes is deterministic,
	// so the same chain always gives the same commits, whichever job
	// makes them. Land: the target moves from Base to Commit.
	Base    string
	Ahead   []Link
	OnTrain []Link
	Tip     string
	Commit  string
	Prune   bool // Land: delete Ref (a branch) once landed, if it still holds Tip
	// Car, Check: who approved the component (Link.Auditors), for its
	// commit's message; none before review.
	Auditors []string
	// Car, Check, Land: host.land_as squash: each link of a chain is one
	// commit on the one before it, its tree the merge's, and the builder's
	// commits are kept off the target (Land keeps Tip under
	// SquashedRef). Otherwise each link is a merge commit whose first
	// parent is the one before it.
	Squash bool
	// Check, Car: a failure is not run again on the same tree
	// (host.retries): it blames nobody, and what it vouched for is checked
	// again in parts (a shared check, or a batch's chain, bisected).
	Once bool
	// Check, Car: how many times at most the checks run on the tree while
	// they fail: 1 + host.retries, or 1 for a run Once. The core's flake
	// policy, in one place: the shell runs no more (nor fewer, unless one
	// passes), and keeps no count of its own. 0 is 1.
	Tries int

	// Car: where the host believes the target is (its base, and what it
	// landed since): a target found elsewhere was moved by hand, and the
	// job says so (Moved) before it checks anything. "" while unknown.
	Target string
	// Car: the commit a landing under way moves the target to: a target
	// found there was moved by the host itself, not by hand.
	Landing string
	// Car, Check: the trees that passed: a chain, or a READY merged with
	// the target, that comes out as one of them is not checked again
	// (Outcome.Reused): a component is never checked twice on the same
	// tree, but to retry a failure. The core decides what passed; the
	// shell only looks the tree up here.
	Passed []string
	// Land: the tree that passed, which Commit must have.
	Tree string
	// Land, Note: the landing's signed receipt (package receipt), recorded
	// before the job starts and kept as Commit's note once it is on the
	// target. Head: the signed head.
	Receipt []byte
	// Land: the landing's place in the chain of receipts.
	Chain *receipt.Link

	Others []Link // Scan: the other refs in flight (Component, Ref, Owner)

	// Land: the landings ahead of this one that the same compare-and-swap
	// makes (a batch, train.go), oldest first, each a Land job of its own
	// (Component, Ref, Owner, Tip, Base: the commit it lands on, Commit,
	// Tree: its own, Receipt): the target moves from the first's Base
	// (From) to Commit, and the first-parent commits between are exactly
	// theirs. Base is then the last one's Commit. Their trees were not checked
	// alone: Tree, this job's, passed, and their receipts say so.
	Batch []Job
}

// Retries is how many times j's checks are run again on the same tree
// after a failure (Tries, less the first).
func (j Job) Retries() int { return max(j.Tries, 1) - 1 }

// From is where a Land job moves the target from: the commit its first
// landing lands on.
func (j Job) From() string {
	if len(j.Batch) > 0 {
		return j.Batch[0].Base
	}
	return j.Base
}

// Landings is each landing j makes, oldest first: its batch, then its own.
func (j Job) Landings() []Job {
	own := j
	own.Batch = nil
	all := append(slices.Clone(j.Batch), own)
	for i := range all {
		all[i].Run = j.Run // one run, whichever try of it
	}
	return all
}

// Link is a component merged in a chain: its name, approved commit, and
// the ref and builder its merge commit's message names.
type Link struct {
	Component string
	Tip       string
	Ref       string
	Owner     string
	Auditors  []string // who approved it, for the message of its commit
}

// Link is j's component as merged in a chain.
func (j Job) Link() Link {
	return Link{Component: j.Component, Tip: j.Tip, Ref: j.Ref, Owner: j.Owner, Auditors: j.Auditors}
}

// SquashedRef is where a landing made with host.land_as squash keeps the
// approved commit it squashed, so that the builder's commits stay in the
// repository (and foreman verify can make the landing again) though no
// branch holds them: refs/foreman/squashed/<the landed commit>.
func SquashedRef(landed string) string { return "refs/foreman/squashed/" + landed }

// Pass is what passed the checks for a component: a record kept durable
// before CI c PASS is said, so that a landing after a restart lands what
// was checked, not whatever the branch holds by then.
type Pass struct {
	Component string `json:"c"`
	Owner     string `json:"owner"`
	Ref       string `json:"ref"`
	Tip       string `json:"tip"`    // the branch's commit that was checked (after any rebase)
	Commit    string `json:"commit"` // what would land: the merge of Tip into Base, or Tip itself
	Base      string `json:"base"`   // the target when it was checked
	Tree      string `json:"tree"`   // Commit's tree
}

// Result is how a job ended.
type Result uint8

const (
	Passed     Result = iota + 1 // the checks passed on Commit
	Failed                       // the checks failed on Commit: Line, Log
	Conflicted                   // merging conflicts (after any rebase): Files
	Invalid                      // the ref is bad, missing, or went away: Line says which
	Moved                        // Check: the branch moved while it was checked: check again; Land: the target was not at Base
	Retry                        // the repository could not do it now (locked, dirty, git failed): Line; try later
	Landed                       // Commit is on the target now
	Cancelled                    // the job was cancelled; nothing to say
	Pinned                       // Pin: Commit is kept as the N-th handoff ref
	Scanned                      // Scan: Overlaps found
	// Refused: Land: the last check before the compare-and-swap found a
	// commit that is not exactly its approved landing (Culprit's; Line
	// says how): nothing moved. Never expected: the core makes the jobs.
	Refused
	// Stale: Car, Land: a branch no longer holds its approved commit
	// (Culprit's, for a Land): Found is what it holds now, "" when it was
	// deleted. Nothing was checked, or landed; the core says what that
	// means for the approval.
	Stale
)

// Note: Landed when Commit is on the target (its note written), Moved when
// it is not (that landing was never made), Retry.

var resultNames = [...]string{"", "passed", "failed", "conflicted", "invalid", "moved", "retry", "landed", "cancelled", "pinned", "scanned", "refused", "stale"}

func (r Result) String() string {
	if int(r) < len(resultNames) {
		return resultNames[r]
	}
	return "?"
}

// Why a check never started (Outcome.NotRun), as package checks says it.
const (
	NotFound      = "not found"      // no such program, or not on the checks' PATH
	NotExecutable = "not executable" // there, but not a program anyone may run
	SandboxFailed = "sandbox failed" // the sandbox could not confine or start it
)

// Outcome is a finished job, as the shell reports it.
type Outcome struct {
	Run     int
	Result  Result
	Commit  string   // what was checked, or landed
	Tip     string   // the branch commit checked
	Base    string   // the target it was merged with
	Tree    string   // Commit's tree
	Line    string   // Failed: the check and its first failing line; Invalid, Retry: why
	Command string   // Failed: the check that failed, named as Flaky names them
	Log     string   // the log's path
	URL     string   // the log's address on the board, if it runs
	Files   []string // Conflicted: the files
	Rebased *Rebase  // the branch was rebased onto the target first
	Already bool     // Landed: it was on the target already (a landing cut short by a crash)
	// Car, Conflicted: the car ahead whose merge into the chain conflicted
	// ("" when it was this car's own): not this car's fault. Land,
	// Invalid: the landing of the batch whose branch moved after approval.
	Culprit string
	// Passed: the checks that failed and then passed when run again on the
	// same tree (host.retries): flaky, not the builder's failure.
	Flaky []string
	// Failed: how many times the job ran the checks on the tree, failing
	// each time (1 + host.retries, or 1 for a job run Once).
	Tries int
	// Failed: a time limit or a sandbox limit: running it again would cost
	// as much and end the same, so it is not (host.retries).
	Lasting bool
	// Failed: the failing check never started. NotRun says why
	// (NotFound, NotExecutable, SandboxFailed) and Program what was to
	// run; InTree, that Program is a file of the checked tree
	// (./check.sh), and then OnTarget is its mode on Base, the target it
	// was merged with (gitrepo.Mode: "" when the target has no such
	// file), and Changed that the checked tree holds it otherwise than
	// Base does (its content or its mode). Interpreter: NotFound, the
	// program a script's first line names, which may be what was not
	// found. The core judges from them whose fault it is (hostFault).
	NotRun      string
	Program     string
	Interpreter string
	InTree      bool
	OnTarget    string
	Changed     bool
	// Land, Moved: the target is not at Base (moved by hand, or the chain
	// was not made on it); Target is where it is now.
	Target string
	Pruned bool // Land: the builder's branch was deleted (host.prune)
	// Stale: what the branch holds now ("" when it was deleted).
	Found string

	Overlaps []Overlap // Scan: the refs the scanned one would conflict with
	N        int       // Pin: which departure of the component the ref counts

	// Passed (Check, Car): how the checks ran, for the receipts (the core
	// adds the run, the commit and the tree). Nil when Reused.
	Checks *receipt.Checks
	// Car, Check, Passed: the tree was one of Job.Passed: not checked
	// again.
	Reused bool
	// Land, Note, Landed: the receipt is Commit's note now.
	Noted bool
	// Land, Landed: where the receipt is kept beside the logs (for the
	// board: its file name in host.logs); ReceiptFiles: each landing's of
	// a batch, in Job.Landings' order.
	ReceiptFile  string
	ReceiptFiles []string

	// Check, Passed: the tree that passed is another's (a shared check's
	// head's, queue.go): this one's own tree was not checked alone.
	In string
	// Car, Passed or Failed: the commits the chain was made of, one per
	// link (each car ahead, then this one: Commit), with their trees: a
	// result that passed vouches for every car in it (a batch).
	Chain []Made
	// Land, Landed: the landings of its batch whose branch was pruned.
	PrunedOf []string
}

// Made is one commit a chain was made of, its tree, and the builder's
// commit it merged.
type Made struct {
	Commit string
	Tree   string
	Tip    string
	// ChecksChanged: the repository's files that define the checks
	// (./check.sh, a Makefile for make) this commit changes from the one
	// before it in the chain: its own checks ran as it defines them, and
	// its receipt says so.
	ChecksChanged []string
}

// Rebase says the host rebased a builder's branch onto the target.
type Rebase struct {
	Branch   string // short name
	From, To string // commits
}
