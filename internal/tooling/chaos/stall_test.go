package chaos

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// TestStall freezes foreman (SIGSTOP) for longer than the check-in
// deadline while its builder keeps checking in every 1.05 s by the room's
// clock. When foreman wakes, what the builder said in the meantime is
// already waiting: no deadline may fire before it is read, so there is no
// TIMEOUT. (Before the fix: TIMEOUT in 12 of 12 trials.)
func TestStall(t *testing.T) {
	trials := scale("CHAOS_STALL_TRIALS", 1, 12)
	for trial := range trials {
		t.Run(fmt.Sprint("trial", trial), stallTrial)
	}
}

func stallTrial(t *testing.T) {
	room := roomtest.Start(t)
	bot := newBotProcess(t, room, nil, "")
	bot.setRules("checkin_interval: 2s\n  missed_checkins: 3") // a 6 s deadline
	obs := observe(room.Join(t, "observer"), bot.id)
	b := room.Join(t, "builder")
	bot.start()
	b.Await(bot.id, "TASKS")
	b.Say("CLAIM db")
	b.Await(bot.id, "ACK db "+b.ID)

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(1050 * time.Millisecond):
				b.Say(fmt.Sprintf("PROGRESS db %d", min(i, 99)))
			}
		}
	}()
	time.Sleep(1500 * time.Millisecond)
	require.NoError(t, bot.cmd.Process.Signal(syscall.SIGSTOP))
	time.Sleep(8 * time.Second)
	require.NoError(t, bot.cmd.Process.Signal(syscall.SIGCONT))
	time.Sleep(4 * time.Second)
	b.Say("STATUS db")
	status, _ := b.Await(bot.id, "STATUS db")
	close(stop)
	<-done
	require.NoError(t, bot.stop(), bot.logs())

	for _, l := range obs.said() {
		require.False(t, strings.HasPrefix(l, "TIMEOUT db"), "a live builder was timed out after foreman's stall:\n%s\nlogs:\n%s",
			strings.Join(obs.said(), "\n"), bot.logs())
	}
	require.Contains(t, status, "STATUS db building owner="+b.ID)
}
