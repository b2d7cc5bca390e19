package hostsim

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// TestSeeds runs HOSTSIM_SEEDS seeds [60] from HOSTSIM_FROM [1]: none
// breaks the promise, most builds complete, and the faults happened.
func TestSeeds(t *testing.T) {
	n, from := envInt("HOSTSIM_SEEDS", 60), envInt("HOSTSIM_FROM", 1)
	if testing.Short() {
		n = min(n, 10)
	}
	sum := RunMany(uint64(from), n, nil)
	for _, v := range sum.Violations {
		t.Errorf("%v\n  run it again: %s", v, v.Replay())
	}
	assert.Positive(t, sum.Landed)
	assert.Positive(t, sum.Batched, "no seed landed a batch")
	t.Logf("%d seeds, %d complete, %d landings (%d in batches), %d steps, faults %v", sum.Seeds, sum.Complete, sum.Landed, sum.Batched, sum.Steps, sum.Faults)
}

// The invariant catches the bug it is for: a host whose jobs land what the
// branch holds now rather than the approved commit lands, in some seed, a
// commit pushed after the review.
func TestTheInvariantCatchesAPlantedBug(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		if r := Run(Options{Seed: seed, plant: "branch-now"}); r.Violation != nil {
			assert.Regexp(t, "never approved|does not merge .*, the commit its receipt says was approved", r.Violation.Detail)
			return
		}
	}
	t.Fatal("no seed of 300 caught a host that lands what the branch holds now")
}

// The invariant catches a host that lands a batch in part: main moved to
// the batch's first commit, whose tree no check passed, not to its head.
func TestTheInvariantCatchesABatchLandedInPart(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		if r := Run(Options{Seed: seed, plant: "batch-prefix"}); r.Violation != nil {
			assert.Contains(t, r.Violation.Detail, "batch")
			return
		}
	}
	t.Fatal("no seed of 300 caught a host that lands a batch's first commit alone")
}

func TestOneSeedTellsTheSameStory(t *testing.T) {
	var a, b []string
	Run(Options{Seed: 7, Trace: func(at time.Duration, what string) { a = append(a, fmt.Sprint(at, what)) }})
	Run(Options{Seed: 7, Trace: func(at time.Duration, what string) { b = append(b, fmt.Sprint(at, what)) }})
	assert.Equal(t, a, b)
	assert.NotEmpty(t, a)
}
