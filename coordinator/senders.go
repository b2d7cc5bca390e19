package coordinator

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/agentforeman/foreman/protocol"
)

// knows reports whether an operator may name id: a sender the room has
// shown (one that spoke, or a member of the channel: KindMembers), or one
// the roles list. ASSIGN to anyone else would assign to nobody real (a
// display name typed as "@me" is not an id).
func (e *Engine) knows(id string) bool {
	if _, ok := e.senders[id]; ok {
		return true
	}
	r := e.cfg.Roles
	for _, ids := range [][]string{r.Operators, r.Auditors, r.CI, r.Merger} {
		if slices.Contains(ids, id) {
			return true
		}
	}
	return false
}

// DisplayName is a display name as the engine keeps it: one clean word
// (no space of any kind, which a transcript could not hold either), or ""
// for none (CleanWord would make that "-", a name someone could type).
func DisplayName(name string) string {
	if name == "" {
		return ""
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return '_'
		}
		return r
	}, protocol.CleanWord(name, protocol.MaxName))
}

// maxNamed bounds the ids an unknownAgent reason lists.
const maxNamed = 5

// unknownAgent says why id cannot be named, with the ids of the senders
// whose display name it is.
func (e *Engine) unknownAgent(id string) string {
	name := strings.TrimPrefix(id, "@")
	var ids []string
	for sid, n := range e.senders {
		if n != "" && strings.EqualFold(n, name) {
			ids = append(ids, sid)
		}
	}
	if len(ids) == 0 {
		return fmt.Sprintf("%s has not been seen in this room; name a sender id, as STATUS shows owners", id)
	}
	sort.Strings(ids)
	more := ""
	if len(ids) > maxNamed {
		ids, more = ids[:maxNamed], fmt.Sprintf(" and %d more", len(ids)-maxNamed)
	}
	return fmt.Sprintf("%s is not a sender id; %s is the display name of %s%s", id, name, strings.Join(ids, " "), more)
}

// Member is someone the room showed in the channel: on its member list
// when foreman joined (JOINED), or joining later (AGENT_JOINED).
type Member struct {
	ID       string // sender id
	Name     string // display name as the room gives it; never identity
	Verified bool   // the room marks the member verified
}

// MaxMembers bounds the members of one KindMembers event, and so the work
// of one step: a shell hands a long member list over in events of at most
// this many (NewMembers leaves out those that would change nothing).
const MaxMembers = 1000

// members takes the members the room showed as senders an operator may
// name, with their display names. A member who leaves stays one, as a
// sender who spoke does: the room showed it, and it may come back.
func (e *Engine) members(ms []Member) {
	for _, m := range ms[:min(len(ms), MaxMembers)] {
		if name, ok := e.member(m); ok {
			e.senders[m.ID] = name
		}
	}
}

// member reports whether m would change what the engine knows of the
// room's senders, and the name it would keep for it. Members that could
// never be named or never speak are left out: foreman itself, the room's
// notices, what is no sender id, and, when senders must be verified,
// unverified ones (their lines are never read). A known member shown
// without a name keeps the name it had.
func (e *Engine) member(m Member) (string, bool) {
	switch {
	case m.ID == e.cfg.Self, m.ID == roomNotices, !protocol.ValidAgent(m.ID):
		return "", false
	case e.rules.RequireVerified && !m.Verified:
		return "", false
	}
	name := DisplayName(m.Name)
	old, known := e.senders[m.ID]
	if known && (name == "" || name == old) {
		return "", false
	}
	return name, true
}

// NewMembers returns the members of ms that a KindMembers event would
// change something for (a new id, or a known one under a new name), each
// id once, in order: what a shell must journal of a member list, which is
// nothing when the room shows what the engine knows. It changes nothing.
func (e *Engine) NewMembers(ms []Member) []Member {
	var out []Member
	var seen map[string]bool
	for _, m := range ms {
		if _, ok := e.member(m); !ok || seen[m.ID] {
			continue
		}
		if seen == nil {
			seen = make(map[string]bool, len(ms))
		}
		seen[m.ID] = true
		out = append(out, m)
	}
	return out
}

// Sender is the display name the engine keeps for a sender id, and
// whether it knows the id at all (it spoke, or the room showed it).
func (e *Engine) Sender(id string) (name string, ok bool) {
	name, ok = e.senders[id]
	return name, ok
}
