package host

import (
	"encoding/json"
	"maps"
	"sort"

	"github.com/agentforeman/foreman/internal/host/receipt"
)

// Record is one entry of the host's ledger (package ledger keeps them).
// The ledger is where the host's decisions live: what passed (a tree, and
// the run that passed it), what was approved (the builder's commit the
// AUDIT PASS was about), each landing's receipt before its compare-and-
// swap, and what landed. A restart, or a standby taking over, reads them
// back (Replay) and decides from them, never from an executor's memory or
// from what a branch holds by then.
type Record struct {
	Op        string `json:"op"`
	Run       int    `json:"run,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Component string `json:"c,omitempty"`
	Ref       string `json:"ref,omitempty"`
	Commit    string `json:"commit,omitempty"`
	Result    string `json:"result,omitempty"`
	Pass      *Pass  `json:"pass,omitempty"`

	Base     string          `json:"base,omitempty"` // receipt, landed: the target's commit it landed on
	Tip      string          `json:"tip,omitempty"`  // landed: the approved commit that landed
	Checks   *receipt.Checks `json:"checks,omitempty"`
	Approval *Approval       `json:"approval,omitempty"`
	Receipt  json.RawMessage `json:"receipt,omitempty"`
	// Chain: receipt, the landing's place in the chain of receipts;
	// chain, the newest landing of the chain (a compacted ledger's).
	Chain *receipt.Link `json:"chain,omitempty"`
}

// Ledger ops.
const (
	OpStart    = "start"    // a job started
	OpEnd      = "end"      // it ended (any result, cancelled included)
	OpTree     = "tree"     // a tree passed the checks: Checks says how, before the verdict that uses it
	OpPass     = "pass"     // a component passed before review; its Pass, before CI PASS is said
	OpApproved = "approved" // a component was approved at Approval.Tip, before it joins the train
	OpReceipt  = "receipt"  // a landing's receipt, before its compare-and-swap
	OpVoid     = "void"     // that landing was not made (the target was elsewhere, or the branch moved)
	OpLanded   = "landed"   // a component was landed at Commit, before MERGED is said
	OpNoted    = "noted"    // Commit's receipt is its note in the repository
	OpFirst    = "first"    // a compacted ledger's first landing was made on Commit
	OpChain    = "chain"    // a compacted ledger's newest landing of the chain of receipts: Chain
)

// Approval is what the host knows of a component's approval.
type Approval struct {
	Component string `json:"c"`
	Owner     string `json:"owner"`
	Ref       string `json:"ref"`
	receipt.Approval
	// Cost is the component's cost as foreman's STATUS line said it with
	// the approval the host recorded: the landing's receipt says it.
	Cost *receipt.Cost `json:"cost,omitempty"`
}

// Receipt is a landing's receipt the ledger holds until its note is known
// to be written (or the landing known not to have been made).
type Receipt struct {
	Component string
	Commit    string
	Base      string
	Tip       string
	Envelope  json.RawMessage
	Landed    bool          // the landing is recorded; only the note may be missing
	Link      *receipt.Link // its place in the chain of receipts (nil in a receipt of version 1)
}

// State is what the ledger gives back on a restart.
type State struct {
	Passes    map[string]Pass     // the latest pass of each component not landed since
	Approvals map[string]Approval // the latest approval of each component, landed or not
	Trees     []receipt.Checks    // the trees that passed, oldest first (the last maxTrees)
	Landed    map[string]string   // the approved commits landed, each to the commit that landed it (the last maxLanded)
	Receipts  []Receipt           // receipts whose note is not known to be written
	First     string              // the target's commit the ledger's first landing was made on: where the chain of receipts starts
	Chain     receipt.Link        // the newest landing of the chain of receipts (Seq 0: none yet)
	LastRun   int                 // the highest run number used
	InFlight  []Record            // jobs started and never ended: a crash cut them short
}

// What the host remembers of what passed and landed is bounded: a build's
// trees and landings are far fewer, and a tree forgotten is only checked
// again.
const (
	maxTrees  = 1024
	maxLanded = 4096
)

// Replay reads records, in the order they were made, into the state they
// leave: the file ledger and the stream's (a standby host's) alike.
type Replay struct {
	lastRun   int
	passes    map[string]Pass
	approvals map[string]Approval
	trees     *recent[receipt.Checks]
	landed    *recent[string]
	receipts  map[string]*Receipt
	recOrder  []string
	started   map[int]Record
	first     string
	chain     receipt.Link
	n         int
}

// Apply takes the next record.
func (r *Replay) Apply(rec Record) {
	if r.passes == nil {
		r.passes, r.approvals, r.landed = map[string]Pass{}, map[string]Approval{}, newRecent[string](maxLanded)
		r.trees, r.receipts, r.started = newRecent[receipt.Checks](maxTrees), map[string]*Receipt{}, map[int]Record{}
	}
	r.n++
	r.lastRun = max(r.lastRun, rec.Run)
	switch rec.Op {
	case OpStart:
		r.started[rec.Run] = rec
	case OpEnd:
		delete(r.started, rec.Run)
	case OpTree:
		if rec.Checks != nil {
			r.trees.put(rec.Checks.Tree, *rec.Checks)
		}
	case OpPass:
		if rec.Pass != nil {
			r.passes[rec.Pass.Component] = *rec.Pass
			// A new check before review: c went back through CI, and
			// whatever was approved before is not what it is now.
			delete(r.approvals, rec.Pass.Component)
		}
	case OpApproved:
		if rec.Approval != nil {
			r.approvals[rec.Approval.Component] = *rec.Approval
		}
	case OpReceipt:
		if _, ok := r.receipts[rec.Commit]; !ok {
			r.recOrder = append(r.recOrder, rec.Commit)
		}
		r.receipts[rec.Commit] = &Receipt{Component: rec.Component, Commit: rec.Commit, Base: rec.Base, Tip: rec.Tip, Envelope: rec.Receipt, Link: rec.Chain}
	case OpVoid, OpNoted:
		delete(r.receipts, rec.Commit)
	case OpLanded:
		delete(r.passes, rec.Component)
		if r.first == "" {
			r.first = rec.Base
		}
		if rec.Tip != "" {
			r.landed.put(rec.Tip, rec.Commit)
		}
		if x := r.receipts[rec.Commit]; x != nil {
			x.Landed = true
			r.chained(x.Link)
		}
	case OpFirst:
		if r.first == "" {
			r.first = rec.Commit
		}
	case OpChain:
		r.chained(rec.Chain)
	}
}

// chained moves the chain's newest landing to l, if l is newer.
func (r *Replay) chained(l *receipt.Link) {
	if l != nil && l.Seq > r.chain.Seq {
		r.chain = *l
	}
}

// Records is how many records were applied.
func (r *Replay) Records() int { return r.n }

// State is what the records applied so far leave.
func (r *Replay) State() State {
	st := State{Passes: maps.Clone(r.passes), Approvals: maps.Clone(r.approvals), Landed: map[string]string{},
		First: r.first, Chain: r.chain, LastRun: r.lastRun}
	if st.Passes == nil {
		st.Passes, st.Approvals = map[string]Pass{}, map[string]Approval{}
	}
	if r.trees != nil {
		st.Trees = r.trees.values()
		for _, tip := range r.landed.keys() {
			st.Landed[tip], _ = r.landed.get(tip)
		}
	}
	for _, commit := range r.recOrder {
		if x := r.receipts[commit]; x != nil {
			st.Receipts = append(st.Receipts, *x)
		}
	}
	for _, rec := range r.started {
		st.InFlight = append(st.InFlight, rec)
	}
	sort.Slice(st.InFlight, func(i, j int) bool { return st.InFlight[i].Run < st.InFlight[j].Run })
	return st
}

// Compacted is the records that leave st and nothing else: what a ledger
// grown long is rewritten as.
func Compacted(st State) []Record {
	recs := []Record{{Op: OpEnd, Run: st.LastRun, Result: "compacted"}}
	if st.First != "" {
		recs = append(recs, Record{Op: OpFirst, Commit: st.First})
	}
	if st.Chain.Seq > 0 {
		ch := st.Chain
		recs = append(recs, Record{Op: OpChain, Chain: &ch})
	}
	for _, t := range st.Trees {
		recs = append(recs, Record{Op: OpTree, Checks: &t})
	}
	// Landings before passes, passes before approvals: each later kind
	// of record undoes some of the one before, as it did when it was made.
	for _, tip := range sortedKeys(st.Landed) {
		recs = append(recs, Record{Op: OpLanded, Tip: tip, Commit: st.Landed[tip]})
	}
	for _, x := range st.Receipts {
		recs = append(recs, Record{Op: OpReceipt, Component: x.Component, Commit: x.Commit, Base: x.Base, Tip: x.Tip, Receipt: x.Envelope, Chain: x.Link})
		if x.Landed {
			recs = append(recs, Record{Op: OpLanded, Component: x.Component, Commit: x.Commit, Base: x.Base, Tip: x.Tip})
		}
	}
	for _, c := range sortedKeys(st.Passes) {
		p := st.Passes[c]
		recs = append(recs, Record{Op: OpPass, Component: c, Pass: &p})
	}
	for _, c := range sortedKeys(st.Approvals) {
		a := st.Approvals[c]
		recs = append(recs, Record{Op: OpApproved, Component: c, Approval: &a})
	}
	return append(recs, st.InFlight...)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
