package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/chatroom"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/tooling/demo"
	"github.com/agentforeman/foreman/internal/up"
)

// roomShow prints the room, each line with the time it was said, and
// keeps what the chat client knows of the room (chatroom.Room) for /who,
// /id and ASSIGN by name.
type roomShow struct {
	*chatroom.Room
	p     *demo.Printer
	w     io.Writer
	color bool
}

func newRoomShow(w io.Writer, color bool, coord string) *roomShow {
	return &roomShow{Room: chatroom.New(coord), w: w, color: color, p: demo.NewPrinter(w, color, nil)}
}

// arrived and left follow the channel's member list.
func (s *roomShow) arrived(agents ...agentchat.Agent) {
	for _, a := range agents {
		s.Arrived(chatroom.Agent{ID: a.ID, Name: a.Name})
	}
}

func (s *roomShow) left(a agentchat.Agent) { s.Left(chatroom.Agent{ID: a.ID, Name: a.Name}) }

// lineAt shows a line said at a given time (zero: now): the room's
// replayed history is old, and shown as old.
func (s *roomShow) lineAt(at time.Time, from, name, text string) {
	s.Heard(from, name, text)
	m := demo.Member{Name: s.Label(from)}
	switch {
	case from == s.Coord:
		m.Role = demo.RoleCoordinator
	case len(s.Roles[from]) > 0: // the agent's own lines too: as others see them
		m.Role = s.Roles[from][0]
	case from == s.Self:
		m.Role = s.Role
	}
	s.p.Print(clock(at, time.Now()), m, s.WithNames(text))
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
	s.UpRoles = map[string][]string{}
	for _, key := range up.HostRoles(&probe, id.AgentID()) {
		s.UpRoles[id.AgentID()] = append(s.UpRoles[id.AgentID()], strings.TrimPrefix(key, "roles."))
	}
}

// who writes /who: everyone in the channel, then those the roles name or
// foreman has given a component who are not here.
func (s *roomShow) who(w io.Writer, channel string) {
	fmt.Fprintf(w, "In %s (%d): names and ids from the room; roles from %s and from what each said; owners from foreman's ACK, TASKS, TIMEOUT, RETRY, MERGED, COMPLETE and STATUS lines and a merger's MERGED (say STATUS for foreman's own account):\n",
		channel, len(s.Here), s.RolesFrom)
	var here, away []string
	for id := range s.Here {
		here = append(here, id)
	}
	seen := map[string]bool{}
	for id := range s.Roles {
		seen[id] = true
	}
	for _, id := range s.Owner {
		seen[id] = true
	}
	for id := range seen {
		if !s.Here[id] {
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
		if c := strings.Compare(strings.ToLower(s.Names[a]), strings.ToLower(s.Names[b])); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	}
	slices.SortFunc(ids, byName)
	rows := make([][]string, 0, len(ids))
	for _, id := range ids {
		name := s.Names[id]
		if name == "" {
			name = "-"
		}
		roles := strings.Join(s.RolesOf(id), ", ")
		if roles == "" {
			roles = "-"
		}
		row := []string{"  " + name, id, roles}
		if c := s.Owns(id); len(c) > 0 {
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
	if _, ok := s.Names["@"+name]; ok || s.Here["@"+name] {
		fmt.Fprintf(w, "@%s is a sender id (%s)\n", name, s.Label("@"+name))
		return
	}
	ids := s.IDsNamed(name, false)
	if len(ids) == 0 {
		fmt.Fprintf(w, "nobody here or heard so far goes by %s; /who lists the room\n", name)
		return
	}
	for _, id := range ids {
		where := "here"
		if !s.Here[id] {
			where = "not here now"
		}
		fmt.Fprintf(w, "%s is %s (%s)\n", s.Names[id], id, where)
	}
}

// rolesSource says where the chat client's roles come from.
func rolesSource(c *config.Config) string {
	if c.File == "" {
		return "no config file (so no roles.*)"
	}
	return c.File + "'s roles.*"
}
