package journal

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/node"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// entries makes n entries from first: messages, with a confirmation now
// and then.
func entries(first uint64, n int) []node.Entry {
	out := make([]node.Entry, n)
	for i := range out {
		idx := first + uint64(i)
		at := t0.Add(time.Duration(idx) * time.Millisecond)
		if idx%5 == 0 {
			out[i] = node.Entry{Index: idx, Confirm: &node.Confirm{Seqs: []node.Range{{From: idx, To: idx + 1}}, MsgID: fmt.Sprint("m", idx), TS: at}}
			continue
		}
		out[i] = node.Entry{Index: idx, Event: &coordinator.Event{Kind: coordinator.KindMessage, At: at,
			Msg: coordinator.Message{ID: fmt.Sprint("id", idx), From: "@b1", Verified: true, At: at, Content: fmt.Sprintf("PROGRESS api %d\nnote", idx%100)}}}
	}
	return out
}

func readAll(t *testing.T, j *Journal, after uint64) []node.Entry {
	t.Helper()
	var got []node.Entry
	require.NoError(t, j.Entries(after, func(e node.Entry) error { got = append(got, e); return nil }))
	return got
}

func open(t *testing.T, dir string, opts Options) *Journal {
	t.Helper()
	j, err := Open(dir, opts)
	require.NoError(t, err)
	return j
}

func TestAppendThenReadBack(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir, Options{})
	assert.True(t, j.Empty())
	require.NoError(t, j.Entries(0, nil))
	want := entries(1, 30)
	require.NoError(t, j.Append(want[:10]))
	require.NoError(t, j.Append(want[10:]))
	assert.False(t, j.Empty())
	require.NoError(t, j.Close())

	j = open(t, dir, Options{})
	defer j.Close()
	assert.Equal(t, want, readAll(t, j, 0))
	assert.Equal(t, want[20:], readAll(t, j, 20))
	more := entries(31, 3)
	require.NoError(t, j.Append(more), "commits go on after the last one read")
	assert.ErrorContains(t, j.Append(entries(40, 1)), "appending entry 40 after entry 33")
}

func TestSegmentsRotateAndSnapshotsCompact(t *testing.T) {
	dir := t.TempDir()
	done := make(chan error, 1)
	opts := Options{SegmentSize: 4096, Snapshotted: func(_ uint64, _ time.Duration, err error) { done <- err }}
	j := open(t, dir, opts)
	require.NoError(t, j.Entries(0, nil))
	want := entries(1, 200)
	for i := 0; i < 200; i += 10 {
		require.NoError(t, j.Append(want[i:i+10]))
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "wal-*.log"))
	require.Greater(t, len(segs), 3, "small segments rotate")

	snap := &node.Snapshot{Index: 150, Engine: &coordinator.Snapshot{Version: coordinator.SnapshotVersion, Build: "b"}, Produced: 7}
	require.NoError(t, j.SaveSnapshot(snap))
	require.NoError(t, <-done)
	after, _ := filepath.Glob(filepath.Join(dir, "wal-*.log"))
	assert.Less(t, len(after), len(segs), "segments the snapshot covers are dropped")
	require.NoError(t, j.Close())

	j = open(t, dir, opts)
	defer j.Close()
	got, err := j.Snapshot()
	require.NoError(t, err)
	assert.Equal(t, uint64(150), got.Index)
	assert.Equal(t, uint64(7), got.Produced)
	assert.Equal(t, want[150:], readAll(t, j, 150))
}

// A commit a kill cut short is dropped; everything before it stays, and
// the next commit goes where the torn one began.
func TestTornCommitIsCut(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir, Options{})
	require.NoError(t, j.Entries(0, nil))
	want := entries(1, 12)
	require.NoError(t, j.Append(want[:10]))
	seg := j.segments[0]
	end := seg.end
	// Half of the next commit reaches the file, as a killed write leaves it.
	payload, err := encodeEntry(want[10])
	require.NoError(t, err)
	rec := appendCommit(nil, payload)
	_, err = seg.f.WriteAt(rec[:len(rec)/2], end)
	require.NoError(t, err)
	require.NoError(t, j.Close())

	j = open(t, dir, Options{})
	defer j.Close()
	assert.Equal(t, want[:10], readAll(t, j, 0))
	require.NoError(t, j.Append(want[10:]))
	j.Close()
	j = open(t, dir, Options{})
	assert.Equal(t, want, readAll(t, j, 0))
}

// A journal cut short behind what foreman had committed is refused: the
// alive mark remembers the last commit.
func TestTruncatedJournalIsRefused(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir, Options{})
	require.NoError(t, j.Entries(0, nil))
	require.NoError(t, j.Append(entries(1, 100)))
	require.NoError(t, j.SaveAlive(t0))
	path := j.segments[0].path
	end := j.segments[0].end
	require.NoError(t, j.Close())
	require.NoError(t, os.Truncate(path, end/2))

	j = open(t, dir, Options{})
	defer j.Close()
	err := j.Entries(0, func(node.Entry) error { return nil })
	var de *DamagedError
	require.True(t, errors.As(err, &de), "%v", err)
	assert.Contains(t, err.Error(), "entry 100 was committed")
	assert.NotContains(t, err.Error(), "\n")
}

// Damage anywhere is found and reported in one line naming the file, or,
// within the last commit, cut as a torn commit; it never crashes, and it is
// never read as something else.
func TestDamageIsReportedNeverRead(t *testing.T) {
	src := t.TempDir()
	j := open(t, src, Options{})
	require.NoError(t, j.Entries(0, nil))
	want := entries(1, 400)
	for i := 0; i < 400; i += 40 {
		require.NoError(t, j.Append(want[i:i+40]))
	}
	path, end := j.segments[0].path, j.segments[0].end
	require.NoError(t, j.Close())
	clean, err := os.ReadFile(path)
	require.NoError(t, err)

	rng := rand.New(rand.NewPCG(1, 2))
	refused, cut := 0, 0
	for trial := range 40 {
		dir := t.TempDir()
		data := append([]byte(nil), clean...)
		for range 1 + rng.IntN(3) {
			data[rng.IntN(int(end))] ^= byte(1 + rng.IntN(255))
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(path)), data, 0o600))
		j, err := Open(dir, Options{})
		require.NoError(t, err)
		var got []node.Entry
		err = j.Entries(0, func(e node.Entry) error { got = append(got, e); return nil })
		j.Close()
		if err != nil {
			var de *DamagedError
			require.True(t, errors.As(err, &de), "trial %d: %v", trial, err)
			assert.Contains(t, err.Error(), filepath.Base(path))
			assert.NotContains(t, err.Error(), "\n")
			refused++
			continue
		}
		require.Equal(t, want[:len(got)], got, "trial %d: whatever is read is what was written", trial)
		require.Less(t, len(got), len(want), "trial %d: damage cannot go unnoticed", trial)
		cut++
	}
	t.Logf("40 damaged copies: %d refused, %d cut back to a clean prefix", refused, cut)
	assert.Positive(t, refused)
}

func TestSnapshotDamageIsReported(t *testing.T) {
	dir := t.TempDir()
	done := make(chan error, 1)
	j := open(t, dir, Options{Snapshotted: func(_ uint64, _ time.Duration, err error) { done <- err }})
	require.NoError(t, j.Entries(0, nil))
	require.NoError(t, j.Append(entries(1, 3)))
	require.NoError(t, j.SaveSnapshot(&node.Snapshot{Index: 3, Engine: &coordinator.Snapshot{Build: "b"}}))
	require.NoError(t, <-done)
	require.NoError(t, j.Close())
	path := filepath.Join(dir, "snapshot")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	data[len(data)-3] ^= 0x40
	require.NoError(t, os.WriteFile(path, data, 0o600))
	j = open(t, dir, Options{})
	defer j.Close()
	_, err = j.Snapshot()
	var de *DamagedError
	require.True(t, errors.As(err, &de), "%v", err)
	assert.Contains(t, err.Error(), "checksum")
}

func TestSecondOpenIsRefused(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir, Options{})
	defer j.Close()
	_, err := Open(dir, Options{})
	assert.ErrorIs(t, err, ErrLocked)
}

func TestOldJournalFileIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	require.NoError(t, os.WriteFile(path, []byte("bbolt"), 0o600))
	_, err := Open(path, Options{})
	assert.ErrorContains(t, err, "older foreman")
}

func TestAliveMark(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir, Options{})
	at, err := j.Alive()
	require.NoError(t, err)
	assert.True(t, at.IsZero())
	require.NoError(t, j.SaveAlive(t0))
	require.NoError(t, j.Close())
	j = open(t, dir, Options{})
	defer j.Close()
	at, err = j.Alive()
	require.NoError(t, err)
	assert.Equal(t, t0, at)
}

// A member list goes in the journal and comes back as it was: ids, names
// and verified marks, in order.
func TestMembersRoundTrip(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir, Options{})
	require.NoError(t, j.Entries(0, nil))
	want := []node.Entry{{Index: 1, Event: &coordinator.Event{Kind: coordinator.KindMembers, At: t0,
		Members: []coordinator.Member{{ID: "@b1aa", Name: "b1", Verified: true}, {ID: "@b2bb"}, {ID: "@b3cc", Name: "b3"}}}}}
	require.NoError(t, j.Append(want))
	require.NoError(t, j.Close())
	j = open(t, dir, Options{})
	defer j.Close()
	assert.Equal(t, want, readAll(t, j, 0))
}

// Spend goes in the journal and comes back as it was: a restart loses no
// spend (issue 47).
func TestSpendRoundTrip(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir, Options{})
	require.NoError(t, j.Entries(0, nil))
	want := []node.Entry{
		{Index: 1, Event: &coordinator.Event{Kind: coordinator.KindSpend, At: t0.Add(time.Second), Spend: coordinator.Spend{
			Agent: "@b1aa", Source: coordinator.SpendRequest, At: t0, ID: "9f2c41aa07d3e816", Cost: coordinator.Cost{USD: 12345, Tokens: 678}}}},
		{Index: 2, Event: &coordinator.Event{Kind: coordinator.KindSpend, At: t0.Add(2 * time.Second), Spend: coordinator.Spend{
			Agent: "@b1aa", Source: coordinator.SpendCumulative, At: t0.Add(time.Second), Series: "claude_code.cost.usage|model=x y",
			Start: t0.Add(-time.Minute), Cost: coordinator.Cost{USD: 5 * 1_000_000}}}},
	}
	require.NoError(t, j.Append(want))
	require.NoError(t, j.Close())
	j = open(t, dir, Options{})
	defer j.Close()
	assert.Equal(t, want, readAll(t, j, 0))
}
