package recovery_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentforeman/foreman/internal/recovery"
	"github.com/agentforeman/foreman/internal/tooling/vopr"
)

// ciSeeds is how many seeds make sim (and so CI) runs: SIMSEEDS in the
// Makefile.
const ciSeeds = 5000

// The fault simulator finds a bug planted in the restart matching, one
// confirmation forgotten (the first stamp in the room's history that would
// confirm replies is skipped), within the seeds CI runs: a reply the room
// has goes out again unmarked.
func TestSimulatorFindsAForgottenConfirmation(t *testing.T) {
	undo := recovery.PlantForgetOneConfirmation()
	defer undo()
	for seed := uint64(1); seed <= ciSeeds; seed++ {
		r := vopr.Run(vopr.Options{Seed: seed})
		if v := r.Violation; v != nil {
			assert.Equal(t, "no reply is said twice unless marked may repeat", v.Invariant, v.Error())
			t.Logf("found at seed %d of %d: %v", seed, ciSeeds, v)
			return
		}
	}
	t.Fatalf("the simulator ran seeds 1 to %d and did not find the planted bug", ciSeeds)
}

// Without the plant, those first seeds keep every promise: the planted
// bug, not the simulator, is what the test above finds.
func TestTheSameSeedsPassWithoutThePlant(t *testing.T) {
	for seed := uint64(1); seed <= 10; seed++ {
		r := vopr.Run(vopr.Options{Seed: seed})
		assert.Nil(t, r.Violation, "seed %d", seed)
	}
}
