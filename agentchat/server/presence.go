package server

import (
	"fmt"
	"strings"
	"time"
)

// Presence, nicknames, typing and the list of agents: what a chat client
// shows about the others. None of it matters to foreman, but stock clients
// send these frames (the stock MCP server sets its presence when it starts
// listening) and die on an error they do not expect.

// nickEvery is how often one connection may change its nick, as on a stock
// server.
const nickEvery = 30 * time.Second

// reservedNicks may not be taken, whatever the case.
var reservedNicks = map[string]bool{
	"server": true, "admin": true, "system": true, "root": true, "moderator": true, "mod": true,
	"bot": true, "agentchat": true, "operator": true, "shadow": true, "god": true, "jc": true,
}

func (s *Server) setPresence(c *conn, r raw) {
	a := c.agent
	if a == nil {
		c.send(errorFrame(errAuthRequired, "Must IDENTIFY first"))
		return
	}
	a.presence, _ = r.str("status")
	a.statusText, _ = r.str("status_text")
	changed := frame("PRESENCE_CHANGED", fields{
		"agent_id": a.id, "name": a.name, "presence": a.presence, "status_text": nullable(a.statusText),
	})
	for _, mc := range s.neighbours(c) {
		mc.send(changed)
	}
}

func (s *Server) setNick(c *conn, r raw) {
	a := c.agent
	if a == nil {
		c.send(errorFrame(errAuthRequired, "Must IDENTIFY first"))
		return
	}
	nick, _ := r.str("nick")
	if reservedNicks[strings.ToLower(nick)] {
		c.send(errorFrame("INVALID_NAME", fmt.Sprintf("Nick %q is reserved", nick)))
		return
	}
	now := time.Now()
	if wait := c.lastNick.Add(nickEvery).Sub(now); !c.lastNick.IsZero() && wait > 0 {
		secs := (wait + time.Second - 1) / time.Second
		c.send(errorFrame(errRateLimited, fmt.Sprintf("Nick change rate limited. Try again in %ds", secs)))
		return
	}
	c.lastNick = now
	old := a.name
	a.name = nick
	s.log.Info().Msgf("%s (%s) is now called %s", a.id, old, nick)
	// A stock server sends this once per channel the two share, and once
	// more to the agent itself; once is enough to tell.
	changed := frame("NICK_CHANGED", fields{"agent_id": a.id, "old_nick": old, "new_nick": nick})
	for _, mc := range s.neighbours(c) {
		mc.send(changed)
	}
	c.send(changed)
}

// typing tells the channel's other members that c is typing. A frame from
// a connection not signed in, or for a channel that does not exist, is
// dropped without a word, as on a stock server.
func (s *Server) typing(c *conn, r raw) {
	name, _ := r.str("channel")
	ch := s.st.channels[name]
	if c.agent == nil || ch == nil {
		return
	}
	f := frame("TYPING", fields{"from": c.agent.id, "from_name": c.agent.name, "channel": name})
	for _, mc := range s.members(ch) {
		if mc != c {
			mc.send(f)
		}
	}
}

func (s *Server) listAgents(c *conn, r raw) {
	if c.agent == nil {
		c.send(errorFrame(errAuthRequired, "Must IDENTIFY first"))
		return
	}
	name, _ := r.str("channel")
	ch := s.st.channels[name]
	if ch == nil {
		c.send(errorFrame(errChannelNotFound, "Channel "+name+" not found"))
		return
	}
	list := []fields{}
	for _, mc := range s.members(ch) {
		a := mc.agent
		presence := a.presence
		if presence == "" {
			presence = "online"
		}
		list = append(list, fields{
			"id": a.id, "name": a.name, "presence": presence, "status_text": nullable(a.statusText), "verified": a.verified,
		})
	}
	c.send(frame("AGENTS", fields{"channel": name, "list": list}))
}

// neighbours are the connections that share a channel with c, each once,
// c left out.
func (s *Server) neighbours(c *conn) []*conn {
	var out []*conn
	seen := map[*conn]bool{c: true}
	for _, ch := range s.sortedChannels() {
		if ch.members[c] == nil {
			continue
		}
		for _, mc := range s.members(ch) {
			if !seen[mc] {
				seen[mc] = true
				out = append(out, mc)
			}
		}
	}
	return out
}

// nullable is s, or JSON null when it is empty.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
