package coordinator

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/agentforeman/foreman/protocol"
)

// knows reports whether an operator may name id: a sender the room has
// shown, or one the roles list. ASSIGN to anyone else would assign to
// nobody real (a display name typed as "@me" is not an id).
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

// senderName is a display name as kept: one clean word, or "" for none
// (CleanWord would make that "-", a name someone could type).
func senderName(name string) string {
	if name == "" {
		return ""
	}
	return protocol.CleanWord(name, protocol.MaxName)
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
		return fmt.Sprintf("%s has not spoken in this room; name a sender id, as STATUS shows owners", id)
	}
	sort.Strings(ids)
	more := ""
	if len(ids) > maxNamed {
		ids, more = ids[:maxNamed], fmt.Sprintf(" and %d more", len(ids)-maxNamed)
	}
	return fmt.Sprintf("%s is not a sender id; %s is the display name of %s%s", id, name, strings.Join(ids, " "), more)
}
