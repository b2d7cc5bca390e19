package vopr

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/transcript"
)

// envInt reads a whole number from the environment, or def.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, name)
	return n
}

// TestSeeds runs the simulator over a few seeds (make sim runs thousands:
// VOPR_SEEDS and VOPR_FROM choose others). A failure names the seed, the
// step and the command that replays it.
func TestSeeds(t *testing.T) {
	n, from := envInt(t, "VOPR_SEEDS", 30), envInt(t, "VOPR_FROM", 1)
	if testing.Short() {
		n = min(n, 5)
	}
	sum := RunMany(uint64(from), n, 0, nil)
	for _, v := range sum.Violations {
		t.Errorf("%v\n  run it again: %s", v, v.Replay())
	}
	assert.Equal(t, n, sum.Seeds)
	assert.Positive(t, sum.Steps)
	t.Logf("%d seeds, %d steps, %d complete, %d held, %d at a limit", sum.Seeds, sum.Steps, sum.Complete, sum.Held, sum.Limits)
}

// A seed tells the same story every time: the same steps, the same faults,
// the same transcript, byte for byte.
func TestSameSeedSameStory(t *testing.T) {
	run := func() (Result, string, string) {
		var hist, room bytes.Buffer
		r, err := Record(Options{Seed: 7}, &hist, &room)
		require.NoError(t, err)
		return r, hist.String(), room.String()
	}
	r1, h1, m1 := run()
	r2, h2, m2 := run()
	assert.Equal(t, r1, r2)
	assert.Equal(t, h1, h2)
	assert.Equal(t, m1, m2)
	assert.Positive(t, r1.Steps)
	assert.NotEmpty(t, m1)
}

// What a seed's journal held, written as a transcript, replays exactly
// through the engine (foreman replay), restarts and gaps included. A
// transcript has one line per line, so a message of several malformed
// lines (a flood) replays with an ERROR per line instead of one per
// message: seeds without floods are the ones checked.
func TestTranscriptsReplay(t *testing.T) {
	checked, members := 0, 0
	for seed := uint64(1); checked < 6 && seed < 100; seed++ {
		if w := newWorld(Options{Seed: seed}); w.plan.on(faultFlood) {
			continue
		}
		var hist bytes.Buffer
		r, err := Record(Options{Seed: seed}, &hist, nil)
		require.NoError(t, err)
		require.Nil(t, r.Violation)
		if bytes.Contains(hist.Bytes(), []byte("\n!members ")) {
			members++ // the room's member lists and joins, journaled
		}
		tr, err := transcript.Parse(fmt.Sprintf("seed-%d.txt", seed), &hist)
		require.NoError(t, err)
		res, err := transcript.Replay(tr)
		require.NoError(t, err)
		if !assert.True(t, res.Passed(), "seed %d", seed) {
			var diff bytes.Buffer
			res.WriteDiff(&diff)
			t.Log(diff.String())
		}
		checked++
	}
	assert.Equal(t, 6, checked)
	assert.Equal(t, 6, members, "every build has members the room showed")
}

// TestTakeovers runs seeds whose stalls are a cluster's takeovers: foreman
// stops past its lease, a standby fences the log and leads it, and the
// stopped one wakes deposed. Every invariant holds, and the deposed one
// never speaks again (VOPR_TAKEOVER_SEEDS runs more).
func TestTakeovers(t *testing.T) {
	n, from := envInt(t, "VOPR_TAKEOVER_SEEDS", 30), envInt(t, "VOPR_FROM", 1)
	if testing.Short() {
		n = min(n, 5)
	}
	sum := RunManyWith(Options{Takeovers: true}, uint64(from), n, 0, nil)
	for _, v := range sum.Violations {
		t.Errorf("%v\n  run it again: %s", v, v.Replay())
	}
	assert.Positive(t, sum.Faults[faultTakeover], "no seed took a build over")
	t.Logf("%d seeds, %d takeovers, %d steps, %d complete, %d held, %d at a limit",
		sum.Seeds, sum.Faults[faultTakeover], sum.Steps, sum.Complete, sum.Held, sum.Limits)
}

// The seeds that found the bugs the simulator found, each fixed: with the
// fix undone, the seed breaks the invariant named (each was checked so);
// with it, the seed keeps every promise. The unit test named pins the
// same bug without the simulator.
var regressions = []struct {
	seed      uint64
	invariant string // what the seed broke before the fix
	fix       string
}{
	{18, invTwice, "node: a message's replies confirmed out of order, urgent ones first (TestConfirmOutOfOrder)"},
	{59, invRestart, "the start records its components and roles; a changed config applies as a reload (TestRestartWithAChangedConfigKeepsTheNumbers)"},
	{1179, invHeardOnce, "a short history may be a restarted room's: a gap unless the replay overlaps what was delivered (TestShortHistoryWithoutTheLastLineIsAGap)"},
	{533, invTwice, "may repeat unless the history reaches back to the log's last echo (TestResentUnlessTheHistoryReachesBackToTheLogsEcho)"},
	{3524, invHeardOnce, "a line of the same millisecond does not prove the history reaches back (TestHistoryOfTheSameMillisecondIsAGap)"},
	{7992, invHeardOnce, "before any line was handled, own replies in a short history prove nothing (TestOwnRepliesInAShortHistoryProveNothing)"},
	{11926, invTwice, "a reload out of the room waits for the join (TestReloadOutOfTheRoomWaitsForTheJoin)"},
	{24944, invLiveTimeout, "the alive mark is the room's latest timestamp, not an estimate of its clock (TestAliveMarkIsTheRoomsLatestWord)"},
	{27756, invTwice, "may repeat unless the history reaches back to the echo the log held when the reply was produced (TestResentUnlessTheHistoryReachesBackToTheEchoBeforeTheReply)"},
	{900374, invHandoff, "a builder's ABORT is a departure once foreman takes it (TASKS, a hard-blocker ESCALATE, an ACK naming it), none once it refuses it: an ACK decided before the departure and heard after it had made the host take a refused ABORT for the departure (TestAnAbortIsADepartureOnceForemanTakesIt)"},
}

func TestRegressionSeeds(t *testing.T) {
	for _, r := range regressions {
		res := Run(Options{Seed: r.seed})
		assert.Nil(t, res.Violation, "seed %d once broke %q; fixed by: %s", r.seed, r.invariant, r.fix)
		assert.Empty(t, res.Limit, "seed %d", r.seed)
	}
}

// The invariants of work in progress catch the bugs they are for (contract
// section 10): a host that pins what a departed builder's branch holds when
// the next builder comes, after the old one force-pushed it empty, and a
// host that says OVERLAP for a component it heard merged.
func TestWorkInProgressInvariantsCatchPlantedBugs(t *testing.T) {
	for plant, inv := range map[string]string{"pin-late": invHandoff, "overlap-merged": invOverlapDone} {
		found := false
		for seed := uint64(1); seed <= 300 && !found; seed++ {
			r := Run(Options{Seed: seed, plant: plant})
			if r.Violation != nil {
				require.Equal(t, inv, r.Violation.Invariant, "seed %d with %s: %v", seed, plant, r.Violation)
				found = true
			}
		}
		assert.True(t, found, "no seed of 300 caught %s", plant)
	}
	// Without a plant the same seeds pass: the host and its checks agree.
	sum := RunMany(1, 40, 0, nil)
	assert.Empty(t, sum.Violations)
	assert.Positive(t, sum.Faults[faultOverlap], "the host said OVERLAP")
	assert.Positive(t, sum.Faults[faultHandoff], "the host pinned handoffs")
}
