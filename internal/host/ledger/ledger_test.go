package ledger

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/host"
)

func TestReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "host", "ledger.jsonl")
	l, st, err := Open(path)
	require.NoError(t, err)
	assert.Empty(t, st.Passes)
	assert.Zero(t, st.LastRun)
	p1 := host.Pass{Component: "api", Owner: "@b1", Ref: "b1/api", Tip: "t", Commit: "m", Base: "b", Tree: "tr"}
	require.NoError(t, l.Append([]host.Record{
		{Op: host.OpStart, Run: 1, Kind: "check", Component: "api"},
		{Op: host.OpEnd, Run: 1, Component: "api", Result: "passed"},
		{Op: host.OpPass, Component: "api", Pass: &p1},
		{Op: host.OpStart, Run: 2, Kind: "check", Component: "db"},
		{Op: host.OpStart, Run: 3, Kind: "land", Component: "api"},
	}))
	_, _, err = Open(path)
	assert.ErrorIs(t, err, ErrLocked, "one host per ledger")
	require.NoError(t, l.Close())

	l, st, err = Open(path)
	require.NoError(t, err)
	assert.Equal(t, map[string]host.Pass{"api": p1}, st.Passes)
	assert.Equal(t, 3, st.LastRun)
	assert.Equal(t, []int{2, 3}, runs(st.InFlight), "cut short by the crash")
	require.NoError(t, l.Append([]host.Record{
		{Op: host.OpEnd, Run: 3, Component: "api", Result: "landed"},
		{Op: host.OpLanded, Component: "api", Commit: "m"},
	}))
	require.NoError(t, l.Close())
	l, st, err = Open(path)
	require.NoError(t, err)
	defer l.Close()
	assert.Empty(t, st.Passes, "landed: nothing left to land")
	assert.Equal(t, []int{2}, runs(st.InFlight))
}

func runs(recs []host.Record) []int {
	var out []int
	for _, r := range recs {
		out = append(out, r.Run)
	}
	return out
}

func TestTornTailIsDroppedDamageIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	l, _, err := Open(path)
	require.NoError(t, err)
	require.NoError(t, l.Append([]host.Record{{Op: host.OpStart, Run: 1, Component: "api"}}))
	require.NoError(t, l.Close())
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"op":"end","run":1,"c":"a`)
	require.NoError(t, err)
	f.Close()
	l, st, err := Open(path)
	require.NoError(t, err)
	assert.Equal(t, []int{1}, runs(st.InFlight), "the torn end was never written")
	require.NoError(t, l.Append([]host.Record{{Op: host.OpEnd, Run: 1, Component: "api"}}))
	require.NoError(t, l.Close())
	data, _ := os.ReadFile(path)
	assert.Equal(t, 2, strings.Count(string(data), "\n"))

	require.NoError(t, os.WriteFile(path, []byte("{\"op\":\"start\",\"run\":1}\nnot json\n{\"op\":\"end\",\"run\":1}\n"), 0o644))
	_, _, err = Open(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "record 2 is damaged")
	assert.NotContains(t, err.Error(), "\n")
}

func TestCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	l, _, err := Open(path)
	require.NoError(t, err)
	p := host.Pass{Component: "api", Commit: strings.Repeat("a", 40)}
	var recs []host.Record
	for i := 1; i <= 12000; i++ {
		recs = append(recs, host.Record{Op: host.OpStart, Run: i, Component: "api"}, host.Record{Op: host.OpEnd, Run: i, Component: "api", Result: "passed"})
	}
	recs = append(recs, host.Record{Op: host.OpPass, Component: "api", Pass: &p}, host.Record{Op: host.OpStart, Run: 12001, Component: "db"})
	require.NoError(t, l.Append(recs))
	require.NoError(t, l.Close())
	l, st, err := Open(path)
	require.NoError(t, err)
	fi, _ := os.Stat(path)
	assert.Less(t, fi.Size(), int64(4096), "rewritten with what is live")
	require.NoError(t, l.Append([]host.Record{{Op: host.OpEnd, Run: 12001, Component: "db"}}))
	_, _, err = Open(path)
	assert.ErrorIs(t, err, ErrLocked, "the lock moved to the new file")
	require.NoError(t, l.Close())
	_, st2, err := Open(path)
	require.NoError(t, err)
	assert.Equal(t, st.Passes, st2.Passes)
	assert.Equal(t, 12001, st2.LastRun)
	assert.Empty(t, st2.InFlight)
}
