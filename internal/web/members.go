package web

import (
	"cmp"
	"slices"
	"strings"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/protocol"
)

// Member is one agent in the channel, as the room lists it.
type Member struct {
	ID       string `json:"id"`
	Name     string `json:"name,omitempty"`
	Verified bool   `json:"verified,omitempty"`
}

// Members is the bot's Options.Members: who is in the channel, from the
// room's member list at each join and its joins and leaves since. Safe
// from any goroutine; it never waits.
func (s *Server) Members(ev agentchat.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &s.room
	r.fed = true
	switch ev := ev.(type) {
	case agentchat.Connected:
		r.self = ev.AgentID
		return // the list comes with Joined
	case agentchat.Joined:
		r.here = map[string]Member{}
		for _, a := range ev.Agents {
			r.add(a)
		}
		if r.self != "" {
			r.add(agentchat.Agent{ID: r.self})
		}
	case agentchat.AgentJoined:
		r.add(ev.Agent)
	case agentchat.AgentLeft:
		delete(r.here, ev.Agent.ID)
	case agentchat.Disconnected:
		r.here = nil // out of the room, foreman does not know who is in it
	default:
		return
	}
	r.seq++
	s.signalLocked(false)
}

// roster is who is in the channel. The server's mutex guards it.
type roster struct {
	fed  bool // the bot tells the board who is here (a board without the hook shows no list)
	self string
	here map[string]Member
	seq  uint64 // changes so far, so that a live viewer is sent the list only when it changed
}

func (r *roster) add(a agentchat.Agent) {
	if a.ID == "" || len(a.ID) > maxIDLen {
		return
	}
	if r.here == nil {
		r.here = map[string]Member{}
	}
	if _, known := r.here[a.ID]; !known && len(r.here) >= maxNames {
		return
	}
	m := r.here[a.ID]
	m.ID = a.ID
	if name := protocol.CleanText(strings.TrimSpace(a.Name), maxNameLen); name != "" {
		m.Name = name
	}
	m.Verified = m.Verified || a.Verified
	r.here[a.ID] = m
}

// list is the members by name, then id.
func (r *roster) list() []Member {
	out := make([]Member, 0, len(r.here))
	for _, m := range r.here {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Member) int {
		return cmp.Or(cmp.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)), cmp.Compare(a.ID, b.ID))
	})
	return out
}
