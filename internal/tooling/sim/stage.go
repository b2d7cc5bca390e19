package sim

import (
	"container/heap"
	"strconv"
	"strings"
	"time"

	"github.com/agentforeman/foreman/agentchat"
)

// Stage is a room on a virtual clock, for runs that must tell the same
// story every time: participants (and whoever else listens, such as a
// coordinator) hear one another through it, with no network, no goroutines
// and no sleeping. Time moves only when Step moves it, to the next thing
// scheduled; things due at the same instant happen in the order they were
// scheduled. A Stage is not safe for concurrent use.
//
// The room is a simple one: a message reaches every other member at the
// instant it is sent, in the order they joined. Each sender keeps the
// room's pace as an AgentChat client does: a message at most every rate,
// carrying every line said since the last one.
type Stage struct {
	now    time.Time
	rate   time.Duration
	n      uint64 // things scheduled so far: ties go to the first scheduled
	queue  agenda
	ears   []ear
	voices map[string]*voice
	msgs   int
}

type ear struct {
	id, name string
	hear     func(agentchat.Message)
}

// voice is one sender's lines waiting for the room's pace.
type voice struct {
	lines   []string
	next    time.Time // the earliest its next message may go
	pending bool      // a send is scheduled
}

// NewStage makes a room whose clock reads start, where each sender sends at
// most one message per rate (0: no pace).
func NewStage(start time.Time, rate time.Duration) *Stage {
	return &Stage{now: start, rate: rate, voices: map[string]*voice{}}
}

// Now is the stage's clock.
func (s *Stage) Now() time.Time { return s.now }

// At schedules f for t (now, if t is past).
func (s *Stage) At(t time.Time, f func()) {
	if t.Before(s.now) {
		t = s.now
	}
	s.n++
	heap.Push(&s.queue, cue{at: t, n: s.n, f: f})
}

// After schedules f for d from now.
func (s *Stage) After(d time.Duration, f func()) { s.At(s.now.Add(d), f) }

// Next is when the next thing is scheduled; false if nothing is.
func (s *Stage) Next() (time.Time, bool) {
	if len(s.queue) == 0 {
		return time.Time{}, false
	}
	return s.queue[0].at, true
}

// Step moves the clock to the next thing scheduled and does it; false if
// nothing is scheduled.
func (s *Stage) Step() bool {
	if len(s.queue) == 0 {
		return false
	}
	c := heap.Pop(&s.queue).(cue)
	s.now = c.at
	c.f()
	return true
}

// Listen adds a member who hears every message the others send, from now on.
func (s *Stage) Listen(id, name string, hear func(agentchat.Message)) {
	s.ears = append(s.ears, ear{id: id, name: name, hear: hear})
}

// Say queues lines from id: they go out in one message as soon as the
// room's pace lets id send, with whatever else id says meanwhile.
func (s *Stage) Say(id string, lines ...string) {
	if len(lines) == 0 {
		return
	}
	v := s.voices[id]
	if v == nil {
		v = &voice{}
		s.voices[id] = v
	}
	v.lines = append(v.lines, lines...)
	if v.pending {
		return
	}
	v.pending = true
	s.At(v.next, func() { s.send(id, v) })
}

// send delivers what id has queued, as one message, to everyone else.
func (s *Stage) send(id string, v *voice) {
	v.pending = false
	s.msgs++
	m := agentchat.Message{
		ID: "m" + strconv.Itoa(s.msgs), From: id, FromName: s.name(id), Content: strings.Join(v.lines, "\n"),
		Verified: true, TS: s.now,
	}
	v.lines, v.next = nil, s.now.Add(s.rate)
	for _, e := range s.ears {
		if e.id != id {
			e.hear(m)
		}
	}
}

func (s *Stage) name(id string) string {
	for _, e := range s.ears {
		if e.id == id {
			return e.name
		}
	}
	return ""
}

// Add puts p on the stage: it joins the room now, hears it, and speaks and
// waits through it. A participant on a stage is never Run.
func (s *Stage) Add(p *Participant) {
	p.stage = s
	s.Listen(p.ID(), p.Name(), p.message)
	p.handle(agentchat.Joined{TS: s.now})
}

// cue is one thing scheduled.
type cue struct {
	at time.Time
	n  uint64
	f  func()
}

// agenda is the stage's schedule, earliest (then first scheduled) first.
type agenda []cue

func (a agenda) Len() int { return len(a) }
func (a agenda) Less(i, j int) bool {
	if !a[i].at.Equal(a[j].at) {
		return a[i].at.Before(a[j].at)
	}
	return a[i].n < a[j].n
}
func (a agenda) Swap(i, j int) { a[i], a[j] = a[j], a[i] }
func (a *agenda) Push(x any)   { *a = append(*a, x.(cue)) }
func (a *agenda) Pop() any {
	old := *a
	c := old[len(old)-1]
	*a = old[:len(old)-1]
	return c
}
