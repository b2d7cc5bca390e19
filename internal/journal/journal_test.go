package journal

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/coordinator"
)

func open(t *testing.T, path string) *Journal {
	t.Helper()
	j, err := Open(path)
	require.NoError(t, err)
	return j
}

func collect(t *testing.T, j *Journal, since uint64) []*Event {
	t.Helper()
	var out []*Event
	require.NoError(t, j.Since(since, func(e *Event) error { out = append(out, e); return nil }))
	return out
}

func TestAppendAndReadBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	j := open(t, path)
	require.NoError(t, j.Append(&Event{Kind: Start, At: 1000}))
	msg := &Event{Kind: Message, At: 2000, ID: "2000-abc", From: "@b1", Verified: true, Content: "CLAIM api\nPROGRESS api 5"}
	require.NoError(t, j.Append(msg, &Event{Kind: Tick, At: 3000}))
	assert.Equal(t, uint64(2), msg.Seq)
	require.NoError(t, j.Close())

	j = open(t, path)
	defer j.Close()
	assert.Equal(t, uint64(3), j.Last(), "numbering goes on after a reopen")
	events := collect(t, j, 0)
	require.Len(t, events, 3)
	assert.Equal(t, *msg, *events[1])
	assert.Equal(t, time.UnixMilli(2000).UTC(), events[1].Time())
	assert.Len(t, collect(t, j, 2), 1)
}

func TestSnapshotCompacts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	j := open(t, path)
	for i := 0; i < 5; i++ {
		require.NoError(t, j.Append(&Event{Kind: Tick, At: int64(i)}))
	}
	snap := &Snapshot{Seq: 4, Produced: 7, Engine: &coordinator.Snapshot{Version: coordinator.SnapshotVersion, Build: "b"}}
	require.NoError(t, j.SaveSnapshot(snap))
	events := collect(t, j, 0)
	require.Len(t, events, 1, "events the snapshot covers are gone")
	assert.Equal(t, uint64(5), events[0].Seq)
	got, err := j.LoadSnapshot()
	require.NoError(t, err)
	assert.Equal(t, snap, got)

	require.NoError(t, j.SaveSnapshot(&Snapshot{Seq: 5, Engine: snap.Engine}))
	require.NoError(t, j.Close())
	j = open(t, path)
	defer j.Close()
	assert.Equal(t, uint64(5), j.Last(), "numbering survives compacting every event")
	require.NoError(t, j.Append(&Event{Kind: Tick}))
	assert.Equal(t, uint64(6), j.Last())
}

func TestOutboxConfirmsOutOfOrder(t *testing.T) {
	o := &Outbox{}
	o.Confirm(2)
	o.Confirm(3)
	assert.Equal(t, uint64(0), o.Through)
	assert.True(t, o.Delivered(3))
	assert.False(t, o.Delivered(1))
	o.Confirm(1)
	assert.Equal(t, Outbox{Through: 3, Also: []uint64{}}, *o)
	o.Confirm(2)
	assert.Equal(t, uint64(3), o.Through)

	j := open(t, filepath.Join(t.TempDir(), "j.db"))
	defer j.Close()
	o.Confirm(5)
	require.NoError(t, j.SaveOutbox(o))
	got, err := j.LoadOutbox()
	require.NoError(t, err)
	assert.True(t, got.Delivered(5))
	assert.False(t, got.Delivered(4))

	now := time.UnixMilli(time.Now().UnixMilli()).UTC()
	require.NoError(t, j.SaveAlive(now))
	alive, err := j.LoadAlive()
	require.NoError(t, err)
	assert.Equal(t, now, alive)
}

func TestSecondOpenIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	j := open(t, path)
	defer j.Close()
	_, err := Open(path)
	assert.ErrorIs(t, err, ErrLocked)
}
