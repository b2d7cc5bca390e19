package host

import (
	"time"

	"github.com/agentforeman/foreman/internal/host/receipt"
)

// The chain of receipts, and the signed head.
//
// Every landing's receipt names the repository (Config.Repository) and
// its place in the chain (receipt.Chain): one more than the landing
// before it, and that one's receipt by digest; the first names where the
// host began. The chain's newest landing is the core's (Core.chain), moved
// only by a landing on record, so a receipt is signed only once every
// receipt before it is known landed or not (unsettled): two landings never
// claim one predecessor.
//
// The newest landing is anchored by the signed head (receipt.Head), which
// the host writes at receipt.HeadRef after every landing and again at
// least every Config.HeadEvery while nothing lands: a verifier that finds
// it missing from the target, or finds it older than it allows, knows the
// target was rolled back, or frozen.

// chained moves the chain's newest landing to l, once l's landing is on
// record as made.
func (h *Core) chained(l *receipt.Link) {
	if l != nil && l.Seq > h.chain.Seq {
		h.chain = *l
		h.headWant = true
	}
}

// unsettled reports whether a receipt signed before is not known landed or
// not (a landing cut short): the next receipt could not say which one it
// follows, so nothing is signed until a Note job settles it.
func (h *Core) unsettled() bool {
	for _, x := range h.receipts {
		if !x.Landed {
			return true
		}
	}
	return false
}

// link is the place in the chain of the landing after prev, which lands
// on on: the first names where the host began (the ledger's first
// landing's base, else on).
func (h *Core) link(prev receipt.Link, on string) *receipt.Chain {
	ch := &receipt.Chain{Seq: prev.Seq + 1, Previous: prev.Digest}
	if prev.Seq == 0 {
		ch.Start = h.first
		if ch.Start == "" {
			ch.Start = on
		}
	}
	return ch
}

// headDue is when the signed head is to be signed again (zero: never, as
// nothing landed yet, or one is being written).
func (h *Core) headDue() time.Time {
	if h.chain.Seq == 0 || h.heading != nil {
		return time.Time{}
	}
	if h.headWant {
		return h.now
	}
	return h.headNext
}

// head starts a Head job when the signed head is wanted or due, one at a
// time (an older head never overwrites a newer one).
func (h *Core) head() {
	due := h.headDue()
	if due.IsZero() || due.After(h.now) {
		return
	}
	env, err := h.sign(receipt.NewHead(receipt.Head{Host: h.cfg.Self, Repository: h.cfg.Repository,
		Target: "refs/heads/" + h.cfg.Target, Newest: h.chain, At: h.now}))
	if err != nil {
		h.headNext = h.now.Add(h.cfg.Backoff) // landings say why signing fails
		return
	}
	h.headWant, h.headNext = false, h.now.Add(h.cfg.HeadEvery)
	h.lastRun++
	h.heading = &run{Job: Job{Run: h.lastRun, Kind: Head, Commit: h.chain.Commit, Receipt: env}, queued: h.now}
	h.begin(h.heading)
}

// headFinished takes the end of a Head job: a signed head that could not
// be written is made again after the backoff.
func (h *Core) headFinished(r *run, o Outcome) {
	h.heading = nil
	h.record(Record{Op: OpEnd, Run: r.Run, Result: o.Result.String(), Commit: r.Commit})
	if o.Result != Landed {
		h.headNext = h.now.Add(h.cfg.Backoff)
	}
}
