package coordinator

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A claim dispute is shown on its component (the board, foreman status,
// STATUS) until it is settled: once the component is merged, or an
// operator has RELEASEd it, no escalation of it is open any more.
func TestClaimDisputeIsClosedByMergeOrRelease(t *testing.T) {
	for _, settle := range []string{"merge", "release"} {
		t.Run(settle, func(t *testing.T) {
			e := started(t, func(c *Config) { c.Roles = Roles{Operators: []string{"@op"}} })
			require.Equal(t, []string{"ACK db @b1"}, e.doReceive(msg("@b1", "CLAIM db", time.Second)))
			for i := range 3 {
				e.doReceive(msg("@b2", "PROGRESS db 10", time.Duration(i+2)*time.Second))
			}
			require.Equal(t, "claim-dispute:@b2", e.View().Components[0].Escalation)
			if settle == "merge" {
				e.doReceive(msg("@b1", "READY db pr/1", 10*time.Second))
				require.Equal(t, []string{"MERGED db", "TASKS api"}, e.doReceive(msg("@aud", "AUDIT db PASS", 11*time.Second)))
			} else {
				require.Equal(t, []string{"OK RELEASE db from @b1", "TASKS db"}, e.doReceive(msg("@op", "RELEASE db", 10*time.Second)))
			}
			assert.Empty(t, e.View().Components[0].Escalation, "settled: nothing left for a human on db")
			assert.NotContains(t, e.doReceive(msg("@x", "STATUS db", 12*time.Second))[0], "escalation=")
		})
	}
}

// While paused nothing is claimable, so what ADD or a merge frees is not
// offered then; RESUME offers it, after its OK. The withheld TASKS
// survives a snapshot.
func TestTasksWithheldWhilePausedComeAfterResume(t *testing.T) {
	e := started(t, func(c *Config) { c.Roles = Roles{Operators: []string{"@op"}} })
	require.Equal(t, []string{"OK PAUSE"}, e.doReceive(msg("@op", "PAUSE", time.Second)))
	require.Equal(t, []string{"OK ADD docs"}, e.doReceive(msg("@op", "ADD docs", 2*time.Second)))
	e2, err := Restore(e.cfg, e.Snapshot())
	require.NoError(t, err)
	require.Equal(t, []string{"OK RESUME", "TASKS db docs"}, e2.doReceive(msg("@op", "RESUME", 3*time.Second)))
	require.Equal(t, []string{"OK PAUSE"}, e2.doReceive(msg("@op", "PAUSE", 4*time.Second)))
	require.Equal(t, []string{"OK RESUME"}, e2.doReceive(msg("@op", "RESUME", 5*time.Second)), "nothing withheld: only OK")
}
