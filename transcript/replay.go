package transcript

import (
	"strings"
	"time"

	"github.com/agentforeman/foreman/coordinator"
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
	After int  // index in Lines of the last heard line before it; -1 if none
	Timer bool // said because a timer fired, not in answer to a line
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
// Lines) and returns the engine to go on with: the same one, or, in tests
// of recovery, one restored from its snapshot.
type Swap func(i int, e *coordinator.Engine) (*coordinator.Engine, error)

// ReplayWith is Replay with a hook after every heard line.
func ReplayWith(t *Transcript, swap Swap) (*Result, error) {
	eng, err := coordinator.New(t.Config())
	if err != nil {
		return nil, &Error{File: t.Name, Line: 1, Msg: err.Error()}
	}
	r := &Result{T: t}
	heard := -1
	record := func(at time.Time, lines []string, timer bool) {
		for _, l := range lines {
			r.Said = append(r.Said, Said{At: at.Sub(Epoch), Text: l, After: heard, Timer: timer})
		}
	}
	tick := func(to time.Duration) {
		for {
			at, out, ok := eng.Tick(Epoch.Add(to))
			if !ok {
				return
			}
			record(at, out, true)
		}
	}
	downtime, reloads := t.Downtime, t.Reloads
	// timed applies the recorder's timed directives due by to: the
	// coordinator's downtime, and reloads (at a line's time, before it).
	timed := func(to time.Duration) {
		for {
			switch {
			case len(downtime) > 0 && downtime[0].To <= to && (len(reloads) == 0 || downtime[0].From <= reloads[0].At):
				tick(downtime[0].From)
				eng.Recover(Epoch.Add(downtime[0].To))
				downtime = downtime[1:]
			case len(reloads) > 0 && reloads[0].At <= to:
				tick(reloads[0].At)
				record(Epoch.Add(reloads[0].At), eng.Reload(Epoch.Add(reloads[0].At), reloads[0].Components), true)
				reloads = reloads[1:]
			default:
				return
			}
		}
	}
	record(Epoch, eng.Start(Epoch), false)
	end := t.End
	for _, r := range t.Reloads {
		end = max(end, r.At)
	}
	for i, l := range t.Lines {
		end = max(end, l.At)
		if l.Said {
			continue
		}
		timed(l.At)
		tick(l.At)
		heard = i
		record(Epoch.Add(l.At), eng.Receive(coordinator.Message{
			From: l.Sender, Verified: true, At: Epoch.Add(l.At), Content: l.Text,
		}), false)
		if swap != nil {
			if eng, err = swap(i, eng); err != nil {
				return nil, err
			}
		}
	}
	timed(end)
	tick(end)
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

func verb(line string) string { return protocol.ReplyVerb(line) }
