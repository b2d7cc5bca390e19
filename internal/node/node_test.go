package node

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/coordinator"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func config() coordinator.Config {
	return coordinator.Config{Build: "shop", Self: "@foreman", Rules: coordinator.DefaultRules(),
		Components: []coordinator.Component{{Name: "db"}, {Name: "api", Deps: []string{"db"}}}}
}

func heard(id, from, text string, s int) coordinator.Message {
	return coordinator.Message{ID: id, From: from, Content: text, At: t0.Add(time.Duration(s) * time.Second)}
}

// persist does what the shell does with a Ready.
func persist(t *testing.T, st Storage, n *Node) Ready {
	t.Helper()
	rd := n.Ready()
	require.NoError(t, st.Append(rd.Entries))
	if rd.Snapshot != nil {
		require.NoError(t, st.SaveSnapshot(rd.Snapshot))
	}
	return rd
}

func texts(ls []Line) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Text
	}
	return out
}

// Replies are numbered in the engine's order; a node reopened from its
// storage numbers them the same and knows which the room confirmed, so a
// restart neither repeats a confirmed reply nor loses an unconfirmed one.
func TestReopenKeepsNumbersAndConfirmations(t *testing.T) {
	for _, every := range []int{-1, 2} { // without snapshots, and with one every 2 entries
		st := NewMemoryStorage()
		n, err := Open(Config{Engine: config(), Storage: st, SnapshotEvery: every})
		require.NoError(t, err)
		n.Step(coordinator.Event{Kind: coordinator.KindStart, At: t0})
		n.Hear(heard("m1", "@a", "CLAIM db", 1))
		n.Hear(heard("m2", "@b", "CLAIM db\nCLAIM api", 2))
		rd := persist(t, st, n)
		assert.Equal(t, []string{"TASKS db", "ACK db @a",
			"REJECT db @b owned by @a; CLAIM another component from TASKS",
			"REJECT api @b waiting on db (not merged yet); CLAIM one from TASKS"}, texts(rd.Messages))
		for i, l := range rd.Messages {
			assert.Equal(t, uint64(i+1), l.Seq)
		}
		assert.Equal(t, rd.Messages[2].Group, rd.Messages[3].Group, "one event's replies are one group")

		n.ConfirmRanges([]Range{{1, 2}}, "e1", t0.Add(3*time.Second))
		n.Confirm([]uint64{2, 3}, "e2", t0.Add(4*time.Second)) // 2 again: only 3 is new
		persist(t, st, n)
		assert.Equal(t, []string{rd.Messages[3].Text}, texts(n.Unconfirmed()))

		again, err := n.Reopen(st)
		require.NoError(t, err)
		assert.Equal(t, uint64(4), again.Produced())
		assert.Equal(t, texts(n.Unconfirmed()), texts(again.Unconfirmed()), "snapshot every %d", every)
		assert.True(t, again.Delivered(3))
		assert.False(t, again.Delivered(4))
		assert.Equal(t, Echo{MsgID: "e2", TS: t0.Add(4 * time.Second)}, again.LastEcho())
		id, at := again.LastMessage()
		assert.Equal(t, "m2", id)
		assert.Equal(t, t0.Add(2*time.Second), at)
		assert.False(t, again.Hear(heard("m2", "@b", "CLAIM db", 2)), "a message handled before is not handled again")
	}
}

// A confirmation of replies never produced changes nothing (a stamp may
// come from an older journal), and is not logged.
func TestConfirmOfUnknownRepliesIsIgnored(t *testing.T) {
	n, err := Open(Config{Engine: config()})
	require.NoError(t, err)
	n.Step(coordinator.Event{Kind: coordinator.KindStart, At: t0})
	n.Ready()
	n.ConfirmRanges([]Range{{5, 1 << 62}}, "x", t0)
	assert.False(t, n.HasReady())
	assert.Len(t, n.Unconfirmed(), 1)
}

func TestSnapshotsSpacedByTheBuildsSize(t *testing.T) {
	assert.Equal(t, DefaultSnapshotEvery, snapshotEvery(7))
	assert.Equal(t, 1000000, snapshotEvery(100000))
}

// A message's lines go out urgent groups first, so its stamp and its echo
// list numbers out of order ("#47,42-46"): every one of them is confirmed.
// (Found by the simulator, seed 1: 42-46 were never confirmed, so a
// restart would have sent them again unmarked.)
func TestConfirmOutOfOrder(t *testing.T) {
	for _, confirm := range []func(n *Node){
		func(n *Node) { n.Confirm([]uint64{5, 2, 3, 4}, "e1", t0) },
		func(n *Node) { n.ConfirmRanges([]Range{{5, 5}, {2, 4}}, "e1", t0) },
	} {
		n, err := Open(Config{Engine: config()})
		require.NoError(t, err)
		n.Step(coordinator.Event{Kind: coordinator.KindStart, At: t0})
		n.Hear(heard("m1", "@a", "CLAIM db", 1))
		n.Hear(heard("m2", "@b", "CLAIM db\nCLAIM api", 2))
		n.Hear(heard("m3", "@c", "CLAIM nothing", 3))
		require.Equal(t, uint64(5), n.Produced())
		n.Ready()
		confirm(n)
		assert.Equal(t, []string{"TASKS db"}, texts(n.Unconfirmed()))
	}
}
