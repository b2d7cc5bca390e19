package web

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/agentforeman/foreman/coordinator"
)

// snapshot is the board as the bot gave it at one moment, shared by every
// viewer and request. Asking the bot for its View walks every component in
// the bot's own goroutine, and laying out the graph costs more: so both
// are done once per change rather than once per viewer, and what the
// change did not touch (the layout unless the graph changed, the JSON of
// each unchanged component) is carried over from the previous snapshot.
// A snapshot is never changed once built.
type snapshot struct {
	seq   uint64    // one more than the previous snapshot's
	gen   uint64    // the server's change count when the view was asked for: every change up to it is in
	asked time.Time // when the view was asked for

	view        *coordinator.View // nil when there is none to show
	problem     string
	stale       bool
	layout      *Layout
	escalations map[string]Escalation

	// graph is the seq of the first snapshot with this graph (the names
	// and dependencies, in order). A viewer that was sent another graph
	// needs the whole board, since its layout and indices are wrong.
	graph  uint64
	comps  [][]byte  // each component's JSON, in view order
	recent []changes // what each of the last snapshots of this graph changed, oldest first

	head       []byte // the members every event has (problem, stale, escalations), as a JSON object
	viewHead   []byte // the view without its components: a JSON object lacking its closing brace
	layoutJSON []byte

	wholeOnce sync.Once
	whole     []byte // the members a whole board adds: the view with its components, and the layout
}

// changes are the components (by index) one snapshot changed.
type changes struct {
	seq   uint64
	comps []int
}

// keepChanges bounds the history a snapshot keeps for viewers that are
// behind: a viewer more snapshots behind gets the whole board. Viewers
// are at most an event gap behind, in which few snapshots are taken.
const keepChanges = 64

// want says how recent a snapshot must be.
type want struct {
	gen   uint64    // it includes every change up to this one
	asked time.Time // its view was asked for no earlier than this
}

func (w want) met(sn *snapshot) bool {
	return sn != nil && sn.gen >= w.gen && !sn.asked.Before(w.asked)
}

// snapshotFor returns the latest snapshot if it is recent enough, or takes
// a new one. Callers that come while one is being taken wait for it and
// use it if it will do: a change seen by a hundred viewers is one View.
func (s *Server) snapshotFor(ctx context.Context, w want) *snapshot {
	if sn := s.snap.Load(); w.met(sn) {
		return sn
	}
	s.takeMu.Lock()
	defer s.takeMu.Unlock()
	if sn := s.snap.Load(); w.met(sn) {
		return sn
	}
	sn := s.take(ctx, s.snap.Load())
	s.snap.Store(sn)
	return sn
}

// take asks the bot for its view and derives the rest. It outlives the
// caller's cancellation: the snapshot is shared, and one viewer leaving
// must not leave the others a board that says the bot did not answer.
func (s *Server) take(ctx context.Context, prev *snapshot) *snapshot {
	sn := &snapshot{seq: 1, asked: time.Now()}
	if prev != nil {
		sn.seq = prev.seq + 1
	}
	s.mu.Lock()
	sn.gen = s.gen
	said := maps.Clone(s.esc)
	s.mu.Unlock()

	if src := s.source(); src == nil {
		sn.problem = "foreman is starting"
		if s.opts.Cluster != nil {
			sn.problem = "standing by: this foreman leads no build now ('led by' says who does)"
		}
	} else {
		vctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), viewTimeout)
		v, err := src.View(vctx)
		cancel()
		switch last := s.lastView.Load(); {
		case err == nil:
			s.keepView(v)
			sn.view = &v
		case last != nil:
			// A stopped bot's last board is still worth showing (the end
			// of a demo, a crash): marked stale, never passed off as current.
			sn.view, sn.stale = last, true
			sn.problem = "foreman is not answering (stopped?); this is the last board it gave"
		default:
			sn.problem = "the bot did not answer: " + err.Error()
		}
	}
	if sn.view != nil {
		sn.escalations = openEscalations(*sn.view, said)
	}
	sn.derive(prev)
	sn.head = mustJSON(struct {
		Problem     string                `json:"problem,omitempty"`
		Stale       bool                  `json:"stale,omitempty"`
		Escalations map[string]Escalation `json:"escalations,omitempty"`
	}{sn.problem, sn.stale, sn.escalations})
	return sn
}

// derive lays the graph out, or keeps the previous layout when the graph
// is the same, and encodes the components that changed.
func (sn *snapshot) derive(prev *snapshot) {
	sn.graph = sn.seq
	if sn.view == nil {
		return
	}
	comps := sn.view.Components
	same := prev != nil && prev.view != nil && sameGraph(prev.view.Components, comps)
	if same {
		sn.graph, sn.layout, sn.layoutJSON = prev.graph, prev.layout, prev.layoutJSON
	} else {
		sn.layout = arrange(comps)
		sn.layoutJSON = mustJSON(sn.layout)
	}
	sn.comps = make([][]byte, len(comps))
	var changed []int
	for i := range comps {
		if same && sameComponent(&prev.view.Components[i], &comps[i]) {
			sn.comps[i] = prev.comps[i]
			continue
		}
		sn.comps[i] = mustJSON(&comps[i])
		if same {
			changed = append(changed, i)
		}
	}
	if same {
		keep := prev.recent[max(0, len(prev.recent)-(keepChanges-1)):]
		sn.recent = append(slices.Clone(keep), changes{seq: sn.seq, comps: changed})
	}
	head := mustJSON(viewHead{View: sn.view})
	sn.viewHead = head[:len(head)-1]
}

// viewHead encodes a view without its components: the outer field, being
// shallower, takes the name "components" from the view's own.
type viewHead struct {
	*coordinator.View
	Components []struct{} `json:"components,omitempty"`
}

// changedSince returns the indices, in order, of the components changed
// after snapshot seq, and false when this snapshot no longer knows (seq is
// of another graph, or too far back).
func (sn *snapshot) changedSince(seq, graph uint64) ([]int, bool) {
	if sn.view == nil || graph != sn.graph || seq > sn.seq {
		return nil, false
	}
	if seq == sn.seq {
		return nil, true
	}
	if len(sn.recent) == 0 || sn.recent[0].seq > seq+1 {
		return nil, false
	}
	var out []int
	for _, c := range sn.recent {
		if c.seq > seq {
			out = append(out, c.comps...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), true
}

// wholeView returns the members that make the board whole: the view with
// every component, and the layout. Encoded at most once per snapshot, and
// only when some viewer needs it.
func (sn *snapshot) wholeView() []byte {
	sn.wholeOnce.Do(func() {
		if sn.view == nil {
			sn.whole = []byte("{}")
			return
		}
		size := len(sn.viewHead) + len(sn.layoutJSON) + 64
		for _, c := range sn.comps {
			size += len(c) + 1
		}
		b := make([]byte, 0, size)
		b = append(b, `{"view":`...)
		b = append(b, sn.viewHead...)
		b = append(b, `,"components":`...)
		b = appendArray(b, sn.comps)
		b = append(b, `},"layout":`...)
		b = append(b, sn.layoutJSON...)
		sn.whole = append(b, '}')
	})
	return sn.whole
}

// appendArray appends a JSON array of the encoded items.
func appendArray(b []byte, items [][]byte) []byte {
	b = append(b, '[')
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	return append(b, ']')
}

// appendSome appends a JSON array of the encoded items at the indices given.
func appendSome(b []byte, items [][]byte, indices []int) []byte {
	b = append(b, '[')
	for k, i := range indices {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, items[i]...)
	}
	return append(b, ']')
}

// appendMembers appends the members of the encoded JSON object obj to b,
// an object left open, with a comma if b has members already.
func appendMembers(b, obj []byte) []byte {
	inner := obj[1 : len(obj)-1]
	if len(inner) == 0 {
		return b
	}
	if b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	return append(b, inner...)
}

// mustJSON encodes what the board itself built; a failure is a bug in
// those types, not a condition to handle.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("web: cannot encode the board: " + err.Error())
	}
	return b
}

// sameGraph reports whether a and b have the same components, in the same
// order, with the same dependencies: all the layout depends on.
func sameGraph(a, b []coordinator.ComponentView) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || !slices.Equal(a[i].Deps, b[i].Deps) {
			return false
		}
	}
	return true
}

// sameComponent reports whether a and b would show the same. It compares
// field by field, at a fraction of the cost of encoding both; a test
// checks that it looks at every field, so one added to ComponentView is
// not missed.
func sameComponent(a, b *coordinator.ComponentView) bool {
	return a.Name == b.Name && a.State == b.State && slices.Equal(a.Deps, b.Deps) &&
		a.Owner == b.Owner && a.Since.Equal(b.Since) &&
		a.Progress == b.Progress && a.HasProgress == b.HasProgress && a.ProgressAt.Equal(b.ProgressAt) &&
		a.PR == b.PR && a.Next == b.Next && a.Deadline.Equal(b.Deadline) &&
		a.Audits == b.Audits && a.CI == b.CI && a.Conflicts == b.Conflicts &&
		slices.Equal(a.Waits, b.Waits) && a.Pushback == b.Pushback &&
		slices.Equal(a.Barred, b.Barred) && slices.Equal(a.TimedOut, b.TimedOut) &&
		a.Escalation == b.Escalation && a.Approved == b.Approved && a.ApprovedBy == b.ApprovedBy &&
		a.BuiltBy == b.BuiltBy && a.Claimable == b.Claimable &&
		a.Branch == b.Branch && slices.Equal(a.Overlaps, b.Overlaps) &&
		a.Spent == b.Spent && (a.Budget == nil) == (b.Budget == nil) && (a.Budget == nil || *a.Budget == *b.Budget)
}
