package coordinator_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/node"
	"github.com/agentforeman/foreman/transcript"
)

// Restoring a snapshot and going on gives the same replies as never
// stopping, at every point of every scenario.
func TestRestoreThenContinueIsNeverStopping(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	require.NoError(t, err)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			f, err := os.Open(file)
			require.NoError(t, err)
			tr, err := transcript.Parse(file, f)
			f.Close()
			require.NoError(t, err)
			want, err := transcript.Replay(tr)
			require.NoError(t, err)

			for cut := range tr.Lines {
				got, err := transcript.ReplayWith(tr, func(i int, n *node.Node) (*node.Node, error) {
					if i != cut {
						return n, nil
					}
					return roundTrip(t, tr.Config(), n), nil
				})
				require.NoError(t, err)
				require.Equal(t, want.Said, got.Said, "restored after line %d", tr.Lines[cut].Pos)
			}
		})
	}
}

// roundTrip snapshots the engine, encodes the snapshot as JSON and restores
// it, then opens the node again from a storage that holds only the engine's
// snapshot.
func roundTrip(t *testing.T, cfg coordinator.Config, n *node.Node) *node.Node {
	t.Helper()
	data, err := json.Marshal(n.Engine().Snapshot())
	require.NoError(t, err)
	var snap coordinator.Snapshot
	require.NoError(t, json.Unmarshal(data, &snap))
	restored, err := coordinator.Restore(cfg, &snap)
	require.NoError(t, err)
	again, err := json.Marshal(restored.Snapshot())
	require.NoError(t, err)
	assert.JSONEq(t, string(data), string(again), "a restored engine snapshots the same")

	ns := n.Snapshot()
	ns.Engine = &snap
	st := node.NewMemoryStorage()
	require.NoError(t, st.SaveSnapshot(ns))
	reopened, err := n.Reopen(st)
	require.NoError(t, err)
	return reopened
}

func TestRestoreRefusesOtherVersions(t *testing.T) {
	_, err := coordinator.Restore(coordinator.Config{Rules: coordinator.DefaultRules()}, &coordinator.Snapshot{Version: 99})
	assert.ErrorContains(t, err, "snapshot version 99")
}
