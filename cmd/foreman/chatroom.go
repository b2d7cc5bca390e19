package main

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/tooling/demo"
	"github.com/agentforeman/foreman/internal/up"
	"github.com/agentforeman/foreman/protocol"
)

// roomShow prints the room, each line with the time it was said, and
// keeps what the chat client knows of the room for /who, /id and ASSIGN
// by name: who is here (the room's member list and its joins and
// leaves), everyone's display name, the roles the config gives, the role
// each sender's own lines show, and who owns what by foreman's replies.
//
// Sender ids are never rewritten: a line shows them as said, each with the
// name it goes by after it, so that any id on screen can be typed back as
// a command's argument.
type roomShow struct {
	p     *demo.Printer
	w     io.Writer
	color bool
	coord string // foreman's id: the one given, or the sender of the first TASKS or stamp
	self  string // the agent's own id, shown with its role
	role  string

	names map[string]string // every sender id seen, with its display name
	here  map[string]bool   // the ids in the channel now
	roles map[string][]string
	said  map[string]string // id -> the role its own lines show (builder, auditor, ci)
	owner map[string]string // component -> its owner's id, by foreman's replies

	rolesFrom string // where roles came from, for /who
	// upRoles are the roles foreman up gives the host's id for its run
	// (addHostRoles) where the config does not list it, by sender id.
	upRoles map[string][]string
}

func newRoomShow(w io.Writer, color bool, coord string) *roomShow {
	return &roomShow{
		w: w, color: color, coord: coord, p: demo.NewPrinter(w, color, nil),
		names: map[string]string{}, here: map[string]bool{}, roles: map[string][]string{},
		said: map[string]string{}, owner: map[string]string{},
	}
}

// setRoles records the roles the configuration gives, by sender id.
func (s *roomShow) setRoles(r coordinator.Roles, from string) {
	s.roles = map[string][]string{}
	for _, kr := range []struct {
		key string
		ids []string
	}{{"operator", r.Operators}, {"auditor", r.Auditors}, {"ci", r.CI}, {"merger", r.Merger}} {
		for _, id := range kr.ids {
			s.roles[id] = append(s.roles[id], kr.key)
		}
	}
	s.rolesFrom = from
}

// lineAt shows a line said at a given time (zero: now): the room's
// replayed history is old, and shown as old.
func (s *roomShow) lineAt(at time.Time, from, name, text string) {
	if s.coord == "" && protocol.VerbOf(text) == protocol.ReplyTasks {
		s.coord = from
	}
	s.learn(from, name)
	s.track(from, text)
	m := demo.Member{Name: s.label(from)}
	switch {
	case from == s.coord:
		m.Role = demo.RoleCoordinator
	case len(s.roles[from]) > 0: // the agent's own lines too: as others see them
		m.Role = s.roles[from][0]
	case from == s.self:
		m.Role = s.role
	}
	s.p.Print(clock(at, time.Now()), m, s.withNames(text))
}

// learn records id's display name, if the room gave one.
func (s *roomShow) learn(id, name string) {
	if id != "" && name != "" {
		s.names[id] = name
	}
}

// arrived and left follow the channel's member list.
func (s *roomShow) arrived(agents ...agentchat.Agent) {
	for _, a := range agents {
		s.here[a.ID] = true
		s.learn(a.ID, a.Name)
	}
}

func (s *roomShow) left(a agentchat.Agent) {
	delete(s.here, a.ID)
	s.learn(a.ID, a.Name)
}

// label is how a sender is shown: its name, with its id when another id
// in the channel now goes by the same name, or its id when it has no
// name. Once such a namesake has left, names read as they did before.
func (s *roomShow) label(id string) string {
	name := s.names[id]
	if name == "" {
		return id
	}
	for _, other := range s.idsNamed(name, true) {
		if other != id {
			return name + " (" + id + ")"
		}
	}
	return name
}

// mentionRE is a sender id inside a line, as protocol.ValidAgent reads one.
var mentionRE = regexp.MustCompile(`@[A-Za-z0-9._-]+`)

// withNames keeps every id in text and follows each known one with its
// name: "ACK db @cb883c6b0913051a (b1)".
func (s *roomShow) withNames(text string) string {
	return mentionRE.ReplaceAllStringFunc(text, func(id string) string {
		if name := s.names[id]; name != "" && "@"+name != id {
			return id + " (" + name + ")"
		}
		return id
	})
}

// track learns from a line what the room says about roles and owners: the
// role a sender's own lines show, and owners from foreman's replies.
func (s *roomShow) track(from, text string) {
	if from != s.coord {
		switch strings.ToUpper(firstWord(text)) {
		case "CLAIM", "PROGRESS", "READY", "BLOCKED", "CONFLICT":
			s.said[from] = "builder"
		case "ABORT":
			s.said[from] = "builder"
			if c := word(text, 1); c != "" && s.owner[c] == from {
				delete(s.owner, c)
			}
		case "AUDIT":
			s.said[from] = "auditor"
		case "CI":
			s.said[from] = "ci"
		case "MERGED": // the merger's (foreman host's) word, in merge mode external
			if c := word(text, 1); c != "" && s.mayMerge(from) {
				delete(s.owner, c)
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
		s.owner[c] = h.Agent
	case protocol.ReplyTimeout, protocol.ReplyRetry, protocol.ReplyMerged:
		delete(s.owner, c)
	case protocol.ReplyComplete:
		clear(s.owner)
	case protocol.ReplyTasks:
		for _, t := range h.Components {
			delete(s.owner, t) // claimable, so nobody's
		}
	case protocol.ReplyOK: // OK RELEASE c
		if strings.EqualFold(word(h.Text, 0), protocol.Release.String()) {
			delete(s.owner, word(h.Text, 1))
		}
	case protocol.ReplyStatus:
		owner := h.Field("owner")
		if owner == "" || h.State == coordinator.Merged.String() {
			delete(s.owner, c)
		} else {
			s.owner[c] = owner
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

func firstWord(text string) string { return word(text, 0) }

// idsNamed returns the ids that go by name, sorted, only those here if
// hereOnly. Names are matched exactly, else ignoring case.
func (s *roomShow) idsNamed(name string, hereOnly bool) []string {
	var exact, folded []string
	for id, n := range s.names {
		if hereOnly && !s.here[id] {
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

// mayMerge reports whether id's MERGED lines count: an operator's or the
// merger's (contract section 2).
func (s *roomShow) mayMerge(id string) bool {
	for _, r := range append(slices.Clone(s.roles[id]), s.upRoles[id]...) {
		if r == "operator" || r == "merger" {
			return true
		}
	}
	return false
}

// hostRoles notes the roles foreman up gives the host of c (its key at
// host.identity, when it exists) for its run, where c does not list it.
func (s *roomShow) hostRoles(c *config.Config) {
	if c.Host.Repo == "" || c.Host.Identity == "" {
		return
	}
	id, err := agentchat.LoadIdentity(c.Host.Identity)
	if err != nil {
		return // not made yet: foreman up makes it on its first start
	}
	probe := *c
	s.upRoles = map[string][]string{}
	for _, key := range up.HostRoles(&probe, id.AgentID()) {
		s.upRoles[id.AgentID()] = append(s.upRoles[id.AgentID()], strings.TrimPrefix(key, "roles."))
	}
}

// rolesOf says what id does, and where that is known from.
func (s *roomShow) rolesOf(id string) []string {
	var out []string
	if id == s.coord {
		out = append(out, "coordinator")
	}
	for _, r := range s.roles[id] {
		out = append(out, r+" (roles."+plural(r)+")")
	}
	for _, r := range s.upRoles[id] {
		out = append(out, r+" (the host's, as foreman up adds it)")
	}
	if r := s.said[id]; r != "" && !slices.Contains(s.roles[id], r) && !slices.Contains(s.upRoles[id], r) {
		out = append(out, r+" (by its lines)")
	}
	if id == s.self {
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

// owns lists the components id owns, sorted.
func (s *roomShow) owns(id string) []string {
	var out []string
	for c, o := range s.owner {
		if o == id {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

// who writes /who: everyone in the channel, then those the roles name or
// foreman has given a component who are not here.
func (s *roomShow) who(w io.Writer, channel string) {
	fmt.Fprintf(w, "In %s (%d): names and ids from the room; roles from %s and from what each said; owners from foreman's ACK, TASKS, TIMEOUT, RETRY, MERGED, COMPLETE and STATUS lines and a merger's MERGED (say STATUS for foreman's own account):\n",
		channel, len(s.here), s.rolesFrom)
	var here, away []string
	for id := range s.here {
		here = append(here, id)
	}
	seen := map[string]bool{}
	for id := range s.roles {
		seen[id] = true
	}
	for _, id := range s.owner {
		seen[id] = true
	}
	for id := range seen {
		if !s.here[id] {
			away = append(away, id)
		}
	}
	s.table(w, here)
	if len(away) > 0 {
		fmt.Fprintln(w, "Not here, but named in the roles or owning a component:")
		s.table(w, away)
	}
}

func (s *roomShow) table(w io.Writer, ids []string) {
	byName := func(a, b string) int {
		if c := strings.Compare(strings.ToLower(s.names[a]), strings.ToLower(s.names[b])); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	}
	slices.SortFunc(ids, byName)
	rows := make([][]string, 0, len(ids))
	for _, id := range ids {
		name := s.names[id]
		if name == "" {
			name = "-"
		}
		roles := strings.Join(s.rolesOf(id), ", ")
		if roles == "" {
			roles = "-"
		}
		row := []string{"  " + name, id, roles}
		if c := s.owns(id); len(c) > 0 {
			row = append(row, "owns "+strings.Join(c, ", "))
		}
		rows = append(rows, row)
	}
	writeTable(w, rows, func(_, _ int, cell string) string { return cell })
}

// lookup writes /id NAME: the ids that go by name, here first.
func (s *roomShow) lookup(w io.Writer, name string) {
	name = strings.TrimPrefix(name, "@")
	if name == "" {
		fmt.Fprintln(w, "/id NAME prints the sender ids that go by NAME; /who lists the whole room")
		return
	}
	if _, ok := s.names["@"+name]; ok || s.here["@"+name] {
		fmt.Fprintf(w, "@%s is a sender id (%s)\n", name, s.label("@"+name))
		return
	}
	ids := s.idsNamed(name, false)
	if len(ids) == 0 {
		fmt.Fprintf(w, "nobody here or heard so far goes by %s; /who lists the room\n", name)
		return
	}
	for _, id := range ids {
		where := "here"
		if !s.here[id] {
			where = "not here now"
		}
		fmt.Fprintf(w, "%s is %s (%s)\n", s.names[id], id, where)
	}
}

// expandAssign reads a typed ASSIGN line whose agent is a display name and
// writes it with the id of the one member here who goes by that name. It
// returns the line to send and what to tell the operator, or ok false when
// nothing should be sent (the name is nobody's here, or several's).
func (s *roomShow) expandAssign(l string) (line, note string, ok bool) {
	f := strings.Fields(l)
	if len(f) != 3 || !strings.EqualFold(f[0], protocol.Assign.String()) {
		return l, "", true
	}
	arg := f[2]
	if _, known := s.names[arg]; known || s.here[arg] || len(s.roles[arg]) > 0 {
		return l, "", true // an id already
	}
	name := strings.TrimPrefix(arg, "@")
	ids := s.idsNamed(name, true)
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

// rolesSource says where the chat client's roles come from.
func rolesSource(c *config.Config) string {
	if c.File == "" {
		return "no config file (so no roles.*)"
	}
	return c.File + "'s roles.*"
}
