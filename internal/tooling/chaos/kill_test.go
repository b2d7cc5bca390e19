package chaos

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// TestKill9 runs a scripted build while killing foreman with SIGKILL at
// random points, restarting it each time. No assignment may be lost or
// given twice, and no reply may reach the room twice: every component is
// ACKed, reviewed and merged exactly once, and the build completes once.
func TestKill9(t *testing.T) {
	trials := scale("CHAOS_TRIALS", 1, 10)
	kills := scale("CHAOS_KILLS", 6, 6)
	for trial := range trials {
		t.Run(fmt.Sprint("trial", trial), func(t *testing.T) { killTrial(t, uint64(trial), kills) })
	}
}

func killTrial(t *testing.T, seed uint64, kills int) {
	rng := rand.New(rand.NewPCG(seed, 9))
	room := roomtest.Start(t)
	aud := room.Join(t, "aud")
	bot := newBotProcess(t, room, []string{aud.ID}, "")
	obs := observe(room.Join(t, "observer"), bot.id)
	auditor(aud, bot.id)
	for _, c := range bookshop {
		builder(room.Join(t, "b-"+c.Name), bot.id, c.Name)
	}

	for k := 0; k < kills; k++ {
		bot.start()
		time.Sleep(time.Duration(50+rng.IntN(450)) * time.Millisecond)
		bot.kill()
	}
	bot.start()
	if !obs.waitFor("COMPLETE", 60*time.Second) {
		t.Fatalf("the build did not complete after %d kills; said:\n%s\nlogs:\n%s",
			kills, strings.Join(obs.said(), "\n"), bot.logs())
	}
	require.NoError(t, bot.stop(), bot.logs())
	t.Logf("%d kills; replies said in each life of the bot: %v", kills, bot.saidPerLife())

	said := obs.said()
	count := map[string]int{}
	for _, l := range said {
		count[l]++
		if count[l] > 1 && !strings.HasPrefix(l, "TASKS") {
			t.Errorf("said twice: %q", l)
		}
	}
	for _, c := range bookshop {
		assert.Equal(t, 1, prefixed(said, "ACK "+c.Name+" "), "ACKs for %s", c.Name)
		assert.Equal(t, 1, prefixed(said, "REVIEW "+c.Name+" "), "REVIEWs for %s", c.Name)
		assert.Equal(t, 1, count["MERGED "+c.Name], "MERGED %s", c.Name)
	}
	assert.Equal(t, 1, count["COMPLETE bookshop"])
	if t.Failed() {
		t.Logf("said:\n%s\nlogs:\n%s", strings.Join(said, "\n"), bot.logs())
	}
}

func prefixed(lines []string, prefix string) int {
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}
