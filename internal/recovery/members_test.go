package recovery

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/node"
)

func membersOf(rd node.Ready) [][]coordinator.Member {
	var out [][]coordinator.Member
	for _, e := range rd.Entries {
		if e.Event != nil && e.Event.Kind == coordinator.KindMembers {
			out = append(out, e.Event.Members)
		}
	}
	return out
}

func agents(n int) []agentchat.Agent {
	out := make([]agentchat.Agent, n)
	for i := range out {
		out[i] = agentchat.Agent{ID: fmt.Sprintf("@m%05d", i), Name: fmt.Sprintf("m%d", i)}
	}
	return out
}

// The room's member list on joining and each agent joining become
// journaled events, after the start; what the engine knows already costs
// no entry, and a long list goes in events of at most MaxMembers.
func TestMembersAreJournaledOnceEach(t *testing.T) {
	st := node.NewMemoryStorage()
	eng := engine("db")
	eng.Roles.Operators = []string{"@op"}
	s := open(t, st, eng)
	list := append([]agentchat.Agent{{ID: "@foreman", Name: "foreman"}, {ID: "@op", Name: "olga"}}, agents(coordinator.MaxMembers+1)...)
	_, err := s.Join(Join{At: t0, Created: true, Members: list})
	require.NoError(t, err)
	rd := commit(t, s)
	require.Equal(t, coordinator.KindStart, rd.Entries[0].Event.Kind, "the start comes first")
	got := membersOf(rd)
	require.Len(t, got, 2)
	assert.Len(t, got[0], coordinator.MaxMembers)
	assert.Equal(t, coordinator.Member{ID: "@op", Name: "olga"}, got[0][0], "foreman itself is left out")
	assert.Len(t, got[1], 2)

	s.Members(list...) // the same list again (a reconnect): nothing new
	s.Members(agentchat.Agent{ID: "@m00003", Name: "m3"})
	assert.Empty(t, commit(t, s).Entries)
	s.Members(agentchat.Agent{ID: "@b1aa", Name: "b1"}) // AGENT_JOINED
	s.Members(agentchat.Agent{ID: "@b1aa", Name: "b1"})
	assert.Equal(t, [][]coordinator.Member{{{ID: "@b1aa", Name: "b1"}}}, membersOf(commit(t, s)))

	// Out of the room the session takes no member list: it would come
	// before the catch-up.
	s.Disconnected()
	commit(t, s)
	s.Members(agentchat.Agent{ID: "@late", Name: "late"})
	assert.Empty(t, membersOf(commit(t, s)))

	// After a restart the log holds them: the operator assigns b1, who
	// never spoke; the new list on joining adds only who is new.
	again := open(t, st, eng)
	j, err := again.Join(Join{At: t0.Add(time.Minute), Members: []agentchat.Agent{{ID: "@b1aa", Name: "b1"}, {ID: "@late", Name: "late"}}})
	require.NoError(t, err)
	assert.True(t, j.CaughtUp)
	rd = commit(t, again)
	assert.Equal(t, [][]coordinator.Member{{{ID: "@late", Name: "late"}}}, membersOf(rd))
	require.NoError(t, again.Hear(agentchat.Message{ID: "m1", From: "@op", Content: "ASSIGN db @b1aa", TS: t0.Add(2 * time.Minute)}))
	assert.Equal(t, []string{"OK ASSIGN db @b1aa", "ACK db @b1aa"}, lineTexts(commit(t, again).Messages))
}
