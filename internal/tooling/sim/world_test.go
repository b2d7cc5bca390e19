package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeWorld runs a behaviour on a virtual clock: timers fire only when the
// test advances it, in order.
type fakeWorld struct {
	t      *testing.T
	id     string
	now    time.Duration
	n      int
	timers []fakeTimer
	said   []string
	rnd    *rand.Rand
}

type fakeTimer struct {
	at time.Duration
	n  int
	f  func()
}

func newWorld(t *testing.T, id string) *fakeWorld {
	return &fakeWorld{t: t, id: id, rnd: rand.New(rand.NewPCG(1, 2))}
}

func (w *fakeWorld) self() string     { return w.id }
func (w *fakeWorld) say(l string)     { w.said = append(w.said, l) }
func (w *fakeWorld) rand() *rand.Rand { return w.rnd }

func (w *fakeWorld) after(d time.Duration, f func()) {
	w.n++
	w.timers = append(w.timers, fakeTimer{at: w.now + d, n: w.n, f: f})
}

// advance runs the clock on by d, firing what falls due.
func (w *fakeWorld) advance(d time.Duration) {
	end := w.now + d
	for {
		i := slices.IndexFunc(w.timers, func(t fakeTimer) bool { return t.at <= end })
		if i < 0 {
			break
		}
		for j, t := range w.timers { // the earliest due, then the first set
			if t.at < w.timers[i].at || t.at == w.timers[i].at && t.n < w.timers[i].n {
				i = j
			}
		}
		t := w.timers[i]
		w.timers = slices.Delete(w.timers, i, i+1)
		w.now = t.at
		t.f()
	}
	w.now = end
}

// take returns what was said since the last take.
func (w *fakeWorld) take() []string {
	out := w.said
	w.said = nil
	return out
}

// hear hands b a line from the coordinator.
func (w *fakeWorld) hear(b behaviour, l string) {
	w.t.Helper()
	r, ok := parseReply(l)
	require.True(w.t, ok, l)
	b.coordinator(w, r)
}
