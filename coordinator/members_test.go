package coordinator

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (e *Engine) doMembers(d time.Duration, ms ...Member) []string {
	return lines(e.Step(Event{Kind: KindMembers, At: at(d), Members: ms}))
}

func withOperator(c *Config) { c.Roles = Roles{Operators: []string{"@op"}} }

// A builder that joined the channel and has said nothing yet is one an
// operator may hand work to; an id the room never showed is still refused.
func TestAssignToAMemberWhoNeverSpoke(t *testing.T) {
	e := started(t, withOperator)
	assert.Nil(t, e.doMembers(time.Second, Member{ID: "@b1aa", Name: "b1"}), "membership says nothing in the room")
	assert.Equal(t, []string{"OK ASSIGN db @b1aa", "ACK db @b1aa"}, e.doReceive(msg("@op", "ASSIGN db @b1aa", 2*time.Second)))
	assert.Equal(t, []string{"REJECT api @op @zz99 has not been seen in this room; name a sender id, as STATUS shows owners"},
		e.doReceive(msg("@op", "ASSIGN api @zz99", 3*time.Second)))
	// The member's display name helps an operator who typed it for an id.
	assert.Equal(t, []string{"REJECT api @op @b1 is not a sender id; b1 is the display name of @b1aa"},
		e.doReceive(msg("@op", "ASSIGN api @b1", 4*time.Second)))
}

// Membership moves no clock: no timer fires for it, and it is no check-in.
func TestMembersMoveNoClock(t *testing.T) {
	e := started(t, withOperator)
	e.doReceive(msg("@b1aa", "CLAIM db", time.Second))
	now := e.Now()
	assert.Nil(t, e.doMembers(10*time.Hour, Member{ID: "@b2bb", Name: "b2"}))
	assert.Equal(t, now, e.Now())
	d, ok := e.NextDeadline()
	require.True(t, ok)
	assert.Equal(t, at(time.Second).Add(e.checkinDeadline()), d, "the deadline stands")
}

// What can never be named or never speak is not taken: foreman itself, the
// room's notices, what is no sender id, and unverified members when
// senders must be verified.
func TestMembersLeftOut(t *testing.T) {
	e := started(t, func(c *Config) { withOperator(c); c.Rules.RequireVerified = true })
	ms := []Member{
		{ID: "@foreman", Verified: true}, {ID: "@server", Verified: true}, {ID: "bob", Verified: true},
		{ID: "@a b", Verified: true}, {ID: "@unv", Name: "u"}, {ID: "@ok", Name: "ok", Verified: true},
	}
	assert.Equal(t, []Member{{ID: "@ok", Name: "ok", Verified: true}}, e.NewMembers(ms))
	e.doMembers(time.Second, ms...)
	_, ok := e.Sender("@unv")
	assert.False(t, ok)
	name, ok := e.Sender("@ok")
	assert.True(t, ok)
	assert.Equal(t, "ok", name)
	out := e.doReceive(Message{From: "@op", Verified: true, At: at(2 * time.Second), Content: "ASSIGN db @unv"})
	assert.Equal(t, []string{"REJECT db @op @unv has not been seen in this room; name a sender id, as STATUS shows owners"}, out)
}

// NewMembers is what a shell journals of a member list: nothing when the
// room shows what the engine knows, each id once, a new name as a change,
// and a known member shown without a name as no change (it keeps its name).
func TestNewMembersIsWhatChanges(t *testing.T) {
	e := started(t, nil)
	e.doReceive(Message{From: "@b1aa", Name: "b1", Verified: true, At: at(time.Second), Content: "hello"})
	e.doMembers(time.Second, Member{ID: "@b2bb", Name: "b2"})
	assert.Empty(t, e.NewMembers([]Member{{ID: "@b1aa", Name: "b1"}, {ID: "@b2bb", Name: "b2"}, {ID: "@b2bb"}, {ID: "@b1aa"}}))
	assert.Equal(t, []Member{{ID: "@b1aa", Name: "bee"}, {ID: "@b3cc"}},
		e.NewMembers([]Member{{ID: "@b1aa", Name: "bee"}, {ID: "@b3cc"}, {ID: "@b3cc", Name: "b3"}, {ID: "@b1aa", Name: "b1"}}))
	e.doMembers(2*time.Second, Member{ID: "@b2bb"})
	name, _ := e.Sender("@b2bb")
	assert.Equal(t, "b2", name, "shown without a name, it keeps the one it had")
	// A message without a name keeps the name too.
	e.doReceive(Message{From: "@b2bb", Verified: true, At: at(3 * time.Second), Content: "hello"})
	name, _ = e.Sender("@b2bb")
	assert.Equal(t, "b2", name)
}

// One event takes at most MaxMembers: the shell splits a long list.
func TestMembersPerEventAreBounded(t *testing.T) {
	e := started(t, nil)
	ms := make([]Member, MaxMembers+5)
	for i := range ms {
		ms[i] = Member{ID: fmt.Sprintf("@m%05d", i)}
	}
	e.doMembers(time.Second, ms...)
	assert.Len(t, e.senders, MaxMembers)
	assert.Len(t, e.NewMembers(ms), 5)
}

// Membership survives a snapshot: a restored engine lets the operator
// assign the member who never spoke, and knows its name.
func TestSnapshotKeepsMembers(t *testing.T) {
	e := started(t, withOperator)
	e.doMembers(time.Second, Member{ID: "@b1aa", Name: "b1"})
	back, err := Restore(e.cfg, e.Snapshot())
	require.NoError(t, err)
	assert.Equal(t, []string{"REJECT db @op @b1 is not a sender id; b1 is the display name of @b1aa"},
		back.doReceive(msg("@op", "ASSIGN db @b1", 2*time.Second)))
	assert.Equal(t, []string{"OK ASSIGN db @b1aa", "ACK db @b1aa"}, back.doReceive(msg("@op", "ASSIGN db @b1aa", 3*time.Second)))
}

// Before the build starts a member list does nothing.
func TestMembersBeforeStart(t *testing.T) {
	e := newEngine(t, withOperator)
	e.doMembers(0, Member{ID: "@b1aa"})
	_, ok := e.Sender("@b1aa")
	assert.False(t, ok)
}
