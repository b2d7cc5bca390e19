package chaos

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat/server"
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
		t.Run(fmt.Sprint("trial", trial), func(t *testing.T) { killTrial(t, uint64(trial), kills, false) })
	}
}

// TestKill9BusyRoom is TestKill9 in a room that keeps only the stock 20
// frames of history while six agents chat: after a restart the history
// may no longer reach back to what foreman last handled or said. Nothing
// may be said twice unless stamped as possibly repeated, and a line lost
// from the history must never go unmentioned: either the build completes,
// or foreman said in the room that it may have missed lines.
func TestKill9BusyRoom(t *testing.T) {
	trials := scale("CHAOS_TRIALS", 1, 10)
	kills := scale("CHAOS_KILLS", 6, 6)
	for trial := range trials {
		t.Run(fmt.Sprint("trial", trial), func(t *testing.T) { killTrial(t, uint64(trial), kills, true) })
	}
}

func killTrial(t *testing.T, seed uint64, kills int, busy bool) {
	rng := rand.New(rand.NewPCG(seed, 9))
	room := roomtest.Start(t)
	if busy {
		room = roomtest.StartWith(t, func(c *server.Config) { c.BufferSize = 20 })
		stop := make(chan struct{})
		t.Cleanup(func() { close(stop) })
		for i := range 6 {
			chatter(room.Join(t, fmt.Sprint("chatty", i)), stop)
		}
	}
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
		if busy { // down long enough for the chat to push its last lines out of the history
			time.Sleep(time.Duration(500+rng.IntN(1500)) * time.Millisecond)
		}
	}
	bot.start()
	if busy {
		complete := obs.waitFor("COMPLETE", 10*time.Second)
		require.NoError(t, bot.stop(), bot.logs())
		gaps := prefixed(obs.said(), "ERROR build foreman may have missed lines")
		t.Logf("%d kills; complete: %v; gaps said: %d; said again, marked: %d", kills, complete, gaps, obs.marked())
		assert.True(t, complete || gaps > 0, "the build stalled and foreman never said it may have missed lines:\n%s\nlogs:\n%s",
			strings.Join(obs.said(), "\n"), bot.logs())
		for _, l := range obs.saidTwice() {
			t.Errorf("said twice: %q", l)
		}
		return
	}
	if !obs.waitFor("COMPLETE", 60*time.Second) {
		t.Fatalf("the build did not complete after %d kills; said:\n%s\nlogs:\n%s",
			kills, strings.Join(obs.said(), "\n"), bot.logs())
	}
	require.NoError(t, bot.stop(), bot.logs())
	t.Logf("%d kills; replies said in each life of the bot: %v", kills, bot.saidPerLife())

	said := obs.said()
	for _, l := range obs.saidTwice() {
		t.Errorf("said twice: %q", l)
	}
	count := map[string]int{}
	for _, l := range said {
		count[l]++
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

// chatter says a line of chat every 100-300 ms until stop.
func chatter(p *roomtest.Peer, stop <-chan struct{}) {
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(100+rand.IntN(200)) * time.Millisecond):
				if p.Queued() == 0 {
					p.Say(fmt.Sprintf("thinking out loud, %d", i))
				}
			}
		}
	}()
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
