package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/protocol"
)

// The board's own memory across restarts of foreman. The engine's state
// survives in the journal, but the room log the board shows and its
// counters (messages sent, replies by verb, escalations by code) are the
// board's: without them a restarted foreman would show an empty log and
// counters back at zero in the middle of a build. They are kept in a file
// beside the journal's segments (Options.StateFile), written every
// carryEvery while something changed and when the board stops, and read
// when it starts. A new build (KindStart) starts the log afresh; the
// counters go on counting, as counters do.

// carryEvery is how often the board writes what it carries, when changed.
const carryEvery = 2 * time.Second

// carried is the file's content.
type carried struct {
	Log         []Entry               `json:"log"`
	Escalations map[string]Escalation `json:"escalations,omitempty"`
	Names       map[string]string     `json:"names,omitempty"`
	Counts      counts                `json:"counts"`
}

// counts are the board's counters, as of the save: those of every earlier
// run of foreman on this journal plus this one's.
type counts struct {
	Room        RoomStats        `json:"room"`
	Commits     int64            `json:"journal_commits"`
	Entries     int64            `json:"journal_entries"`
	Replies     map[string]int64 `json:"replies,omitempty"`     // lines said, by verb
	Escalations map[string]int64 `json:"escalations,omitempty"` // ESCALATE lines, by code
	Heard       int64            `json:"heard"`
	Events      int64            `json:"events"`
}

// tally counts what Observe and Handled see, for the file: Prometheus
// counters cannot be read back cheaply. The server's mutex guards it.
type tally struct {
	replies, escalations map[string]int64
	heard, events        int64
}

func (t *tally) said(r protocol.Reply) {
	// Each map on its own: a saved board with replies and no escalations
	// (omitted when empty) loads one and not the other.
	if t.replies == nil {
		t.replies = map[string]int64{}
	}
	if t.escalations == nil {
		t.escalations = map[string]int64{}
	}
	t.replies[r.Verb.String()]++
	if r.Verb == protocol.ReplyEscalate {
		t.escalations[string(r.Code)]++
	}
}

// base holds what earlier runs counted of the counters this run's source
// starts again from zero (the room connection's, the journal's commits).
type base struct {
	room             RoomStats
	commits, entries int64
}

// loadCarried reads the file, if there is one, into a new server: the log,
// escalations and names as they were, and the counters to go on from.
func (s *Server) loadCarried() error {
	path := s.opts.StateFile
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var c carried
	if err := json.Unmarshal(b, &c); err != nil {
		return fmt.Errorf("%s is not the board's state (%v); the board starts empty", path, err)
	}
	for _, e := range c.Log {
		s.log.add(e.At, e.From, e.Said, e.Text)
	}
	for subject, e := range c.Escalations {
		s.esc[subject] = e
	}
	for id, name := range c.Names {
		s.names.set(id, name)
	}
	n := c.Counts
	s.base = base{room: n.Room, commits: n.Commits, entries: n.Entries}
	for verb, k := range n.Replies {
		s.metrics.replies.WithLabelValues(verb).Add(float64(k))
		switch protocol.LookupReplyVerb(verb) {
		case protocol.ReplyAck:
			s.metrics.claims.Add(float64(k))
		case protocol.ReplyTimeout:
			s.metrics.timeouts.Add(float64(k))
		case protocol.ReplyRetry:
			s.metrics.retries.Add(float64(k))
		}
	}
	for code, k := range n.Escalations {
		s.metrics.escalations.WithLabelValues(code).Add(float64(k))
	}
	s.metrics.heard.Add(float64(n.Heard))
	s.metrics.events.Add(float64(n.Events))
	s.tally = tally{replies: n.Replies, escalations: n.Escalations, heard: n.Heard, events: n.Events}
	return nil
}

// saveCarried writes the file (a new one, renamed over the old, so that a
// crash leaves one or the other whole).
func (s *Server) saveCarried() error {
	src := s.source()
	room := s.roomStats(src)
	s.mu.Lock()
	// Copies: the file is marshalled again below, out of the lock, while
	// the bot's goroutine goes on counting into the maps.
	c := carried{
		Log:         s.log.since(0),
		Escalations: maps.Clone(s.esc),
		Names:       map[string]string{},
		Counts: counts{Room: room, Commits: s.base.commits, Entries: s.base.entries,
			Replies: maps.Clone(s.tally.replies), Escalations: maps.Clone(s.tally.escalations), Heard: s.tally.heard, Events: s.tally.events},
	}
	for id, l := range s.names.byID {
		c.Names[id] = l.name
	}
	b, err := json.Marshal(&c)
	s.dirty = false
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if src != nil {
		h := src.Health()
		c.Counts.Commits += h.Commits
		c.Counts.Entries += h.Entries
		if b, err = json.Marshal(&c); err != nil {
			return err
		}
	}
	path := s.opts.StateFile
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".new"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// keepCarried writes the file while the board serves, and once more when
// it stops (the bot has stopped by then: its final counters are in).
func (s *Server) keepCarried(ctx context.Context) {
	t := time.NewTicker(carryEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if s.source() != nil { // a board whose bot never started has nothing of its own to keep
				s.carry()
			}
			return
		case <-t.C:
			s.mu.Lock()
			dirty := s.dirty
			s.mu.Unlock()
			if dirty {
				s.carry()
			}
		}
	}
}

func (s *Server) carry() {
	if err := s.saveCarried(); err != nil {
		s.opts.Logger.Warn().Err(err).Str("file", s.opts.StateFile).Msg("could not keep the board's log and counters for the next start")
	}
}

// freshBuild forgets what the board carried from an earlier build: a new
// one has started (the caller holds the mutex).
func (s *Server) freshBuild(ev *coordinator.Event) {
	if ev == nil || ev.Kind != coordinator.KindStart {
		return
	}
	s.log = newRoomLog(s.opts.LogSize)
	s.esc = map[string]Escalation{}
}

// roomStats are the room's counters: this run's, on top of earlier runs'.
func (s *Server) roomStats(src Source) RoomStats {
	r := roomStats(src)
	b := s.base.room
	r.MessagesSent += b.MessagesSent
	r.LinesSent += b.LinesSent
	r.Resent += b.Resent
	r.Reconnects += b.Reconnects
	return r
}
