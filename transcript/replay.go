package transcript

import (
	"strings"
	"time"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/node"
	"github.com/agentforeman/foreman/protocol"
)

// Epoch is the wall-clock instant a replayed build starts at. Only times
// relative to it ever show, so its value is arbitrary but fixed: replays are
// deterministic.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Said is a line the coordinator said during a replay.
type Said struct {
	At    time.Duration
	Text  string
	After int  // the file line (Pos) of the last input handled before it: a heard line or a timed directive; 0 if none
	Timer bool // said because a timer fired, not in answer to that input
}

// Result is the outcome of replaying a transcript.
type Result struct {
	T        *Transcript
	Said     []Said   // everything the engine said, in order
	Diff     []Change // expected against actual, aligned
	Failures int      // changes that fail the replay
}

// Passed reports whether the engine said exactly what the transcript expects.
func (r *Result) Passed() bool { return r.Failures == 0 }

// Replay runs the transcript on a virtual clock (contract section 9): the
// build starts at 00:00:00; every heard line is handed to the engine at its
// time, after the timers due by then have fired, each at its own deadline;
// then the clock runs on to the last line's time or !end. What the engine
// said is compared with the coordinator's lines.
func Replay(t *Transcript) (*Result, error) { return ReplayWith(t, nil) }

// Swap is called after each heard line is handled (i is its index in
// Lines) and returns the node to go on with: the same one, or, in tests of
// recovery, one restored from its snapshot.
type Swap func(i int, n *node.Node) (*node.Node, error)

// ReplayWith is Replay with a hook after every heard line. It drives the
// engine through a node, as the live bot does: the timers due by a line's
// time fire first, each at its deadline, then the line.
func ReplayWith(t *Transcript, swap Swap) (*Result, error) {
	r := &Result{T: t}
	heard := 0
	observe := func(ev *coordinator.Event, said []coordinator.Reply) {
		timer := ev.Kind == coordinator.KindTick
		for _, l := range said {
			r.Said = append(r.Said, Said{At: l.At.Sub(Epoch), Text: l.Text, After: heard, Timer: timer})
		}
	}
	n, err := node.Open(node.Config{Engine: t.Config(), SnapshotEvery: -1, Observe: observe})
	if err != nil {
		return nil, &Error{File: t.Name, Line: 1, Msg: err.Error()}
	}
	// timed applies the recorder's directives that stand before line i:
	// the timers due by then fire first, then what the directive records.
	next := 0
	timed := func(i int) {
		for ; next < len(t.Timed) && t.Timed[next].Before <= i; next++ {
			d := t.Timed[next]
			switch d.Kind {
			case coordinator.KindMembers: // membership moves no clock, live or here
			case coordinator.KindRecover:
				// foreman ran until From (its alive mark): its clock moved
				// on to then, as it did live; only the rest is a pause.
				n.Step(coordinator.Event{Kind: coordinator.KindAdvance, At: Epoch.Add(d.From)})
			default:
				n.Wake(Epoch.Add(d.From))
			}
			heard = d.Pos
			n.Step(coordinator.Event{Kind: d.Kind, At: Epoch.Add(d.At), Components: d.Components, Roles: d.Roles,
				Since: Epoch.Add(d.Since), Until: Epoch.Add(d.Until), Members: d.Members, Spend: d.Spend})
		}
	}
	n.Step(coordinator.Event{Kind: coordinator.KindStart, At: Epoch, ClaimAgain: t.ClaimAgain})
	end := t.End
	for _, d := range t.Timed {
		end = max(end, d.At)
	}
	for i, l := range t.Lines {
		end = max(end, l.At)
		timed(i)
		if l.Said {
			continue
		}
		n.Wake(Epoch.Add(l.At))
		heard = l.Pos
		n.Hear(coordinator.Message{From: l.Sender, Verified: true, At: Epoch.Add(l.At), Content: l.Text})
		n.Ready() // nothing to persist or send in a replay
		if swap != nil {
			if n, err = swap(i, n); err != nil {
				return nil, err
			}
		}
	}
	timed(len(t.Lines))
	n.Wake(Epoch.Add(end))
	r.Diff = align(expected(t), r.Said, t.Ignore)
	for _, c := range r.Diff {
		if c.Kind != Same {
			r.Failures++
		}
	}
	return r, nil
}

func expected(t *Transcript) []Line {
	var out []Line
	for _, l := range t.Lines {
		if l.Said {
			out = append(out, l)
		}
	}
	return out
}

// matches reports whether the engine's line satisfies an expected one: the
// same time, and the same text or the text continued after a space (so a
// transcript may pin "REJECT api @b2" and leave the reason free).
func matches(want Line, got Said) bool {
	return want.At == got.At && (got.Text == want.Text || strings.HasPrefix(got.Text, want.Text+" "))
}

func verb(line string) string { return protocol.VerbOf(line).String() }
