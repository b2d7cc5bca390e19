package node

import (
	"slices"
	"sort"
)

// Line is one numbered reply, ready for the room.
type Line struct {
	Seq    uint64 `json:"seq"`
	Text   string `json:"text"`
	Urgent bool   `json:"urgent,omitempty"`
	// Group is the entry that produced the line: the lines of one event
	// belong together, in order, in one message (contract section 8).
	Group uint64 `json:"group"`
	// Resent marks a line sent again after a restart that the room's
	// history could not prove undelivered: it may repeat.
	Resent bool `json:"resent,omitempty"`
	// After is the room's last confirmation the log held when the line was
	// produced. No life of foreman can have sent the line before that
	// message reached the room, but any may have sent it since: a history
	// that reaches back to After shows every copy of the line the room has.
	After Echo `json:"after,omitzero"`
}

// Range is the replies From through To.
type Range struct {
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
}

// Ranges compresses sequence numbers into ranges, in order. The numbers
// of one message need not be sorted: an urgent group goes out before older
// ones in the same message.
func Ranges(seqs []uint64) []Range {
	seqs = slices.Clone(seqs)
	slices.Sort(seqs)
	var out []Range
	for _, s := range seqs {
		if n := len(out); n > 0 && out[n-1].To+1 >= s {
			out[n-1].To = max(out[n-1].To, s)
			continue
		}
		out = append(out, Range{s, s})
	}
	return out
}

// mergeRanges joins touching ranges of a sorted list.
func mergeRanges(rs []Range) []Range {
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && out[n-1].To+1 >= r.From {
			out[n-1].To = max(out[n-1].To, r.To)
			continue
		}
		out = append(out, r)
	}
	return out
}

// confirmed is the set of replies the room has confirmed: every one up to
// Through, and the ranges above it. Batches go out in groups that urgency
// may reorder, so confirmations can arrive out of order; ranges keep that
// cheap however long the backlog (a list of single numbers went quadratic
// under a flood).
type confirmed struct {
	Through uint64  `json:"through"`
	Above   []Range `json:"above,omitempty"` // sorted, apart, all beyond Through+1
}

func (c *confirmed) has(seq uint64) bool {
	if seq <= c.Through {
		return true
	}
	i := sort.Search(len(c.Above), func(i int) bool { return c.Above[i].To >= seq })
	return i < len(c.Above) && c.Above[i].From <= seq
}

func (c *confirmed) add(r Range) {
	if r.To <= c.Through {
		return
	}
	r.From = max(r.From, c.Through+1)
	// Merge with every range it touches.
	i := sort.Search(len(c.Above), func(i int) bool { return c.Above[i].To+1 >= r.From })
	j := i
	for j < len(c.Above) && c.Above[j].From <= r.To+1 {
		r.From, r.To = min(r.From, c.Above[j].From), max(r.To, c.Above[j].To)
		j++
	}
	c.Above = slices.Replace(c.Above, i, j, r)
	if len(c.Above) > 0 && c.Above[0].From == c.Through+1 {
		c.Through = c.Above[0].To
		c.Above = slices.Delete(c.Above, 0, 1)
	}
	if len(c.Above) == 0 {
		c.Above = nil
	}
}

// outbox keeps the replies the room has not confirmed, until it does.
type outbox struct {
	done    confirmed
	waiting map[uint64]Line
}

func newOutbox() outbox { return outbox{waiting: map[uint64]Line{}} }

func (o *outbox) add(l Line) {
	if !o.done.has(l.Seq) {
		o.waiting[l.Seq] = l
	}
}

func (o *outbox) confirm(rs []Range) {
	for _, r := range rs {
		o.done.add(r)
		if r.To-r.From >= uint64(len(o.waiting)) {
			for s := range o.waiting {
				if r.From <= s && s <= r.To {
					delete(o.waiting, s)
				}
			}
			continue
		}
		for s := r.From; s <= r.To; s++ {
			delete(o.waiting, s)
		}
	}
}

// unconfirmed lists the waiting replies in order.
func (o *outbox) unconfirmed() []Line {
	out := make([]Line, 0, len(o.waiting))
	for _, l := range o.waiting {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b Line) int {
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	})
	return out
}
