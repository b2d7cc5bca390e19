package verify

import "fmt"

// chains checks, across the rows (oldest first), the chain their receipts
// make: each receipt of version 2 names the landing before it on the
// target, by its receipt's digest and one more than its counter, the first
// of the walk excepted when the walk starts inside the chain (--since);
// the first of all names none. A landing taken out, put in, reordered,
// or two that claim one predecessor, is refused where the chain breaks;
// so is a receipt of version 1 above a chained one, and a second start.
// fromStart: the walk began where the chain did.
func chains(o Options, rows []Row, fromStart bool) {
	var last *Row
	claimed := map[string]string{} // a receipt's digest -> the commit whose receipt follows it
	for i := range rows {
		r := &rows[i]
		x := r.rc
		if x == nil || x.err != nil {
			continue // no receipt, or one that does not hold: judged already
		}
		ch := x.st.Predicate.Chain
		if ch == nil {
			if last != nil {
				refuse(r, fmt.Sprintf("its receipt has no place in a chain (a receipt of version 1), above landing %d (%s) of the chain on this branch: once the receipts are chained, every landing's is",
					last.Seq, short(last.Commit)))
			}
			continue
		}
		if !x.chained(o) {
			continue // another repository's: refused already, and no part of this chain
		}
		switch {
		case ch.Previous != "" && claimed[ch.Previous] != "":
			refuse(r, fmt.Sprintf("its receipt follows the landing %s follows (two landings claim one predecessor): the chain forked", short(claimed[ch.Previous])))
		case last == nil && ch.Seq == 1:
		case last == nil && !fromStart:
			// The walk starts inside the chain (--since): what came
			// before is below it.
		case last == nil:
			refuse(r, fmt.Sprintf("its receipt is landing %d of a chain, and no landing of it is below it on this branch", ch.Seq))
		case ch.Seq == 1:
			refuse(r, fmt.Sprintf("its receipt begins a chain again, above landing %d (%s) of the one under way: the host's ledger was lost, or another host lands here with the same key",
				last.Seq, short(last.Commit)))
		case ch.Previous != last.rc.digest:
			refuse(r, fmt.Sprintf("its receipt (landing %d) follows a landing that is not the one before it on this branch, landing %d (%s): a landing was taken out, or put in, or moved",
				ch.Seq, last.Seq, short(last.Commit)))
		case ch.Seq != last.Seq+1:
			refuse(r, fmt.Sprintf("its receipt says it is landing %d, and it follows landing %d (%s)", ch.Seq, last.Seq, short(last.Commit)))
		}
		if ch.Previous != "" {
			claimed[ch.Previous] = r.Commit
		}
		last = r
	}
}

// refuse refuses r for why, unless it is refused already (its own reason
// stays).
func refuse(r *Row, why string) {
	if r.Verdict == Refused {
		return
	}
	r.Verdict, r.Why = Refused, why
}
