package coordinator

import (
	"container/heap"
	"time"
)

// timerKind says what happens when a deadline passes.
type timerKind uint8

const (
	noTimer       timerKind = iota
	checkinTimer            // building or blocked: TIMEOUT
	auditTimer              // review: ESCALATE audit-overdue
	ciTimer                 // ci: counts a CI failure
	overtimeTimer           // the build: ESCALATE build overtime
)

// what names what fires, for STATUS.
var timerWhat = [...]string{"", "timeout", "audit-overdue", "ci-timeout", "overtime"}

// timer is a deadline in the engine's heap. Each component owns one; the
// build owns the overtime timer.
type timer struct {
	at    time.Time
	kind  timerKind
	comp  int // component index; -1 for the build
	index int // position in the heap; -1 when not armed
}

func (t *timer) armed() bool { return t.index >= 0 }

// timers is a min-heap of armed timers. Ties on the deadline are broken by
// component and kind, so the firing order never depends on the heap's
// history: a restored engine fires exactly as the original would have.
type timers []*timer

func (h timers) Len() int { return len(h) }
func (h timers) Less(i, j int) bool {
	a, b := h[i], h[j]
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	if a.comp != b.comp {
		return a.comp < b.comp
	}
	return a.kind < b.kind
}
func (h timers) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *timers) Push(x any) {
	t := x.(*timer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timers) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}

// arm sets t to fire at the given time, in O(log n).
func (h *timers) arm(t *timer, kind timerKind, at time.Time) {
	t.kind, t.at = kind, at
	if t.armed() {
		heap.Fix(h, t.index)
		return
	}
	heap.Push(h, t)
}

// stop disarms t, if armed.
func (h *timers) stop(t *timer) {
	if t.armed() {
		heap.Remove(h, t.index)
	}
	t.kind = noTimer
}

// next returns the earliest armed timer, or nil.
func (h timers) next() *timer {
	if len(h) == 0 {
		return nil
	}
	return h[0]
}

// shift moves every deadline later by d. Adding the same amount to every
// key keeps the heap ordered, so nothing moves.
func (h timers) shift(d time.Duration) {
	for _, t := range h {
		t.at = t.at.Add(d)
	}
}
