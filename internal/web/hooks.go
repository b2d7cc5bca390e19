package web

import (
	"strings"
	"time"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/protocol"
)

// Observe is the bot's Options.Observe: every event the engine handled and
// what it said. It runs in the bot's goroutine, so it only records and
// signals, and never waits on anything.
func (s *Server) Observe(ev *coordinator.Event, said []coordinator.Reply) {
	heardLines := 0
	s.mu.Lock()
	s.freshBuild(ev)
	if ev.Kind == coordinator.KindMessage {
		// A stamping sender (another foreman, say) ends its message with a
		// stamp: bookkeeping for the sender, not a line anyone said.
		_, body, _ := agentchat.ParseStamp(ev.Msg.Content)
		for line := range protocol.Lines(body) {
			if line = strings.TrimSpace(line); line != "" {
				s.log.add(ev.At, ev.Msg.From, false, line)
				heardLines++
			}
		}
	}
	for _, r := range said {
		s.log.add(r.At, "", true, r.Text)
		s.tally.said(r.Reply)
		if r.Verb == protocol.ReplyEscalate {
			s.esc[r.Subject] = Escalation{Code: string(r.Code), Text: r.Detail, At: r.At}
		}
	}
	s.tally.heard += int64(heardLines)
	if heardLines > 0 || len(said) > 0 {
		s.dirty = true
		s.signalLocked(true)
	}
	s.mu.Unlock()

	s.metrics.heard.Add(float64(heardLines))
	for _, r := range said {
		s.metrics.said(r.Reply)
	}
}

// Handled is the bot's Options.Handled: how long a batch of events took.
func (s *Server) Handled(d time.Duration, events int) {
	s.metrics.handling.Observe(d.Seconds())
	s.metrics.events.Add(float64(events))
	s.mu.Lock()
	s.tally.events += int64(events)
	s.dirty = true
	s.mu.Unlock()
}

// notify tells live boards to fetch the view again.
func (s *Server) notify() {
	s.mu.Lock()
	s.signalLocked(true)
	s.mu.Unlock()
}

// signalLocked wakes live boards. viewChanged says the bot's view may have
// changed, so that a board must ask for it again rather than use the
// snapshot it has.
func (s *Server) signalLocked(viewChanged bool) {
	if viewChanged {
		s.gen++
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

// watch returns a channel closed at the next change.
func (s *Server) watch() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// generation counts the changes to the view signalled so far.
func (s *Server) generation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}
