package web

import (
	"strings"

	"github.com/agentforeman/foreman/protocol"
)

// Bounds on the names kept. A sender id is short (AgentChat's are 17
// bytes); the bounds only keep a misbehaving room from growing the board
// without limit. Past maxNames, new senders show as their ids.
const (
	maxIDLen   = 128
	maxNameLen = 40
	maxNames   = 10000
)

// Named records id's display name, for the board to show in place of the
// id (which stays on hover). The bot calls it whenever the room tells it a
// name (a member list, a join, a message's sender name); a name said again
// costs a map lookup. Safe from any goroutine; it never waits.
//
// Names come from the room and anyone can pick any name: the board shows
// them as text only, and always with the id one hover away.
func (s *Server) Named(id, name string) {
	name = protocol.CleanText(strings.TrimSpace(name), maxNameLen)
	if id == "" || len(id) > maxIDLen || name == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.names.set(id, name) {
		// A name changes no view: pages are told, but no new View is asked for.
		s.dirty = true
		s.signalLocked(false)
	}
}

// nameBook keeps display names by sender id, and the order they were
// learned in so that a viewer is sent each one once. The server's mutex
// guards it.
type nameBook struct {
	byID map[string]learned
	seq  uint64 // of the latest name learned
}

type learned struct {
	name string
	seq  uint64
}

// set reports whether the name was new.
func (n *nameBook) set(id, name string) bool {
	if n.byID == nil {
		n.byID = map[string]learned{}
	}
	old, known := n.byID[id]
	if known && old.name == name || !known && len(n.byID) >= maxNames {
		return false
	}
	n.seq++
	n.byID[id] = learned{name: name, seq: n.seq}
	return true
}

// since returns the names learned after seq (nil when none), and the
// latest seq.
func (n *nameBook) since(seq uint64) (map[string]string, uint64) {
	if seq >= n.seq {
		return nil, n.seq
	}
	out := map[string]string{}
	for id, l := range n.byID {
		if l.seq > seq {
			out[id] = l.name
		}
	}
	return out, n.seq
}
