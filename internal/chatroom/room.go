// Package chatroom is the room as foreman's chat client knows it, for
// /who, /id and ASSIGN by name: who is here (the member list and its joins
// and leaves), everyone's display name, the roles the configuration gives,
// the role each sender's own lines show, and who owns what by foreman's
// replies. Every line is read by the contract's grammar (package
// protocol): a line it cannot read teaches nothing. It does no I/O; the
// chat client (cmd/foreman) shows what it knows.
//
// Sender ids are never rewritten: a line shows them as said, each with the
// name it goes by after it, so that any id on screen can be typed back as
// a command's argument.
package chatroom

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/protocol"
)

// Agent is a member of the room: its sender id and display name.
type Agent struct{ ID, Name string }

// Room is what the client knows of the room.
type Room struct {
	Coord string // foreman's id: the one given, or the sender of the first TASKS or stamp
	Self  string // the client's own id
	Role  string // the client's role, as it shows its own lines

	Names map[string]string // every sender id seen, with its display name
	Here  map[string]bool   // the ids in the channel now
	Roles map[string][]string
	Said  map[string]string // id -> the role its own lines show (builder, auditor, ci)
	Owner map[string]string // component -> its owner's id, by foreman's replies

	RolesFrom string // where roles came from, for /who
	// UpRoles are the roles foreman up gives the host's id for its run
	// where the config does not list it, by sender id.
	UpRoles map[string][]string
}

// New is a room with coord as foreman's id ("" until a line shows it).
func New(coord string) *Room {
	return &Room{Coord: coord, Names: map[string]string{}, Here: map[string]bool{}, Roles: map[string][]string{},
		Said: map[string]string{}, Owner: map[string]string{}}
}

// Heard learns from a line from a sender: foreman's id from its first
// TASKS, the sender's name, and what the line says of roles and owners.
func (s *Room) Heard(from, name, text string) {
	if s.Coord == "" && protocol.VerbOf(text) == protocol.ReplyTasks {
		s.Coord = from
	}
	s.Learn(from, name)
	s.track(from, text)
}

// SetRoles records the roles the configuration gives, by sender id.
func (s *Room) SetRoles(r coordinator.Roles, from string) {
	s.Roles = map[string][]string{}
	for _, kr := range []struct {
		key string
		ids []string
	}{{"operator", r.Operators}, {"auditor", r.Auditors}, {"ci", r.CI}, {"merger", r.Merger}} {
		for _, id := range kr.ids {
			s.Roles[id] = append(s.Roles[id], kr.key)
		}
	}
	s.RolesFrom = from
}

// Learn records id's display name, if the room gave one.
func (s *Room) Learn(id, name string) {
	if id != "" && name != "" {
		s.Names[id] = name
	}
}

// Arrived and Left follow the channel's member list.
func (s *Room) Arrived(agents ...Agent) {
	for _, a := range agents {
		s.Here[a.ID] = true
		s.Learn(a.ID, a.Name)
	}
}

func (s *Room) Left(a Agent) {
	delete(s.Here, a.ID)
	s.Learn(a.ID, a.Name)
}

// Label is how a sender is shown: its name, with its id when another id
// in the channel now goes by the same name, or its id when it has no
// name. Once such a namesake has left, names read as they did before.
func (s *Room) Label(id string) string {
	name := s.Names[id]
	if name == "" {
		return id
	}
	for _, other := range s.IDsNamed(name, true) {
		if other != id {
			return name + " (" + id + ")"
		}
	}
	return name
}

// mentionRE is a sender id inside a line, as protocol.ValidAgent reads one.
var mentionRE = regexp.MustCompile(`@[A-Za-z0-9._-]+`)

// WithNames keeps every id in text and follows each known one with its
// name: "ACK db @cb883c6b0913051a (b1)".
func (s *Room) WithNames(text string) string {
	return mentionRE.ReplaceAllStringFunc(text, func(id string) string {
		if name := s.Names[id]; name != "" && "@"+name != id {
			return id + " (" + name + ")"
		}
		return id
	})
}

// track learns from a line what the room says about roles and owners: the
// role a sender's own lines show, and owners from foreman's replies.
func (s *Room) track(from, text string) {
	if from != s.Coord {
		// An agent's line, read by the contract's grammar (section 2): what
		// it cannot read (chat, a malformed line) teaches nothing.
		cmd, err := protocol.Read(text)
		if err != nil {
			return
		}
		switch cmd.Verb {
		case protocol.Claim, protocol.Progress, protocol.Ready, protocol.Blocked, protocol.Conflict:
			s.Said[from] = "builder"
		case protocol.Abort:
			s.Said[from] = "builder"
			if s.Owner[cmd.Component] == from {
				delete(s.Owner, cmd.Component)
			}
		case protocol.Audit:
			s.Said[from] = "auditor"
		case protocol.CI:
			s.Said[from] = "ci"
		case protocol.Merged: // the merger's (foreman host's) word, in merge mode external
			if s.MayMerge(from) {
				delete(s.Owner, cmd.Component)
			}
		}
		return
	}
	// Read foreman's lines by the contract's grammar: a short or odd line
	// is skipped, never indexed past its end.
	h, err := protocol.ReadReply(text)
	if err != nil {
		return
	}
	c := h.Subject
	switch h.Verb {
	case protocol.ReplyAck:
		s.Owner[c] = h.Agent
	case protocol.ReplyTimeout, protocol.ReplyRetry, protocol.ReplyMerged:
		delete(s.Owner, c)
	case protocol.ReplyComplete:
		clear(s.Owner)
	case protocol.ReplyTasks:
		for _, t := range h.Components {
			delete(s.Owner, t) // claimable, so nobody's
		}
	case protocol.ReplyOK: // OK RELEASE c
		if strings.EqualFold(word(h.Text, 0), protocol.Release.String()) {
			delete(s.Owner, word(h.Text, 1))
		}
	case protocol.ReplyStatus:
		owner := h.Field("owner")
		if owner == "" || h.State == coordinator.Merged.String() {
			delete(s.Owner, c)
		} else {
			s.Owner[c] = owner
		}
	}
}

// word is the nth word of a line (0 is the verb), "" if there is none.
func word(text string, n int) string {
	f := strings.Fields(text)
	if n < len(f) {
		return f[n]
	}
	return ""
}

// IDsNamed returns the ids that go by name, sorted, only those here if
// hereOnly. Names are matched exactly, else ignoring case.
func (s *Room) IDsNamed(name string, hereOnly bool) []string {
	var exact, folded []string
	for id, n := range s.Names {
		if hereOnly && !s.Here[id] {
			continue
		}
		switch {
		case n == name:
			exact = append(exact, id)
		case strings.EqualFold(n, name):
			folded = append(folded, id)
		}
	}
	if len(exact) == 0 {
		exact = folded
	}
	sort.Strings(exact)
	return exact
}

// MayMerge reports whether id's MERGED lines count: an operator's or the
// merger's (contract section 2).
func (s *Room) MayMerge(id string) bool {
	for _, r := range append(slices.Clone(s.Roles[id]), s.UpRoles[id]...) {
		if r == "operator" || r == "merger" {
			return true
		}
	}
	return false
}

// RolesOf says what id does, and where that is known from.
func (s *Room) RolesOf(id string) []string {
	var out []string
	if id == s.Coord {
		out = append(out, "coordinator")
	}
	for _, r := range s.Roles[id] {
		out = append(out, r+" (roles."+plural(r)+")")
	}
	for _, r := range s.UpRoles[id] {
		out = append(out, r+" (the host's, as foreman up adds it)")
	}
	if r := s.Said[id]; r != "" && !slices.Contains(s.Roles[id], r) && !slices.Contains(s.UpRoles[id], r) {
		out = append(out, r+" (by its lines)")
	}
	if id == s.Self {
		out = append(out, "you")
	}
	return out
}

func plural(role string) string {
	switch role {
	case "operator", "auditor":
		return role + "s"
	}
	return role
}

// Owns lists the components id owns, sorted.
func (s *Room) Owns(id string) []string {
	var out []string
	for c, o := range s.Owner {
		if o == id {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

// ExpandAssign reads a typed ASSIGN line whose agent is a display name and
// writes it with the id of the one member here who goes by that name. It
// returns the line to send and what to tell the operator, or ok false when
// nothing should be sent (the name is nobody's here, or several's).
func (s *Room) ExpandAssign(l string) (line, note string, ok bool) {
	f := strings.Fields(l)
	if len(f) != 3 || !strings.EqualFold(f[0], protocol.Assign.String()) {
		return l, "", true
	}
	arg := f[2]
	if _, known := s.Names[arg]; known || s.Here[arg] || len(s.Roles[arg]) > 0 {
		return l, "", true // an id already
	}
	name := strings.TrimPrefix(arg, "@")
	ids := s.IDsNamed(name, true)
	switch {
	case len(ids) == 1:
		f[2] = ids[0]
		line = strings.Join(f, " ")
		return line, fmt.Sprintf("%s is %s, the only one here by that name: sending %s", name, ids[0], line), true
	case len(ids) > 1:
		return "", fmt.Sprintf("not sent: %d here go by %s (%s); type the id: %s %s %s",
			len(ids), name, strings.Join(ids, ", "), f[0], f[1], ids[0]), false
	case strings.HasPrefix(arg, "@"):
		return l, "", true // perhaps an id this client has not seen: foreman decides
	}
	return "", fmt.Sprintf("not sent: nobody here goes by %s (/who lists the room); type a sender id: %s %s @id", name, f[0], f[1]), false
}
