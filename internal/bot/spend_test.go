package bot

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// Spend handed to the bot (as the OTLP receiver does) is journaled before
// the exporter hears it was taken: a budget holds the component in the
// room, a restart of foreman loses none of it, and the recording replays
// with it (issue 47).
func TestSpendIsJournaledAndHeldAgainstBudgets(t *testing.T) {
	r := roomtest.Start(t)
	b1, op := r.Join(t, "b1"), r.Join(t, "op")
	id, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	cfg := fastConfig(t, r.URL(), t.TempDir(), coordinator.Component{Name: "db"})
	cfg.Roles.Operators = []string{op.ID}
	bot := id.AgentID()
	b, stop := runBot(t, cfg, id)
	ctx := context.Background()

	b1.Await(bot, "TASKS db")
	op.Say("BUDGET db 1")
	op.Await(bot, "OK BUDGET db 1.00")
	b1.Say("CLAIM db")
	b1.Await(bot, "ACK db "+b1.ID)
	spend := func(b *Bot, usd int64) error {
		return b.Spend(ctx, []coordinator.Spend{{Agent: b1.ID, Source: coordinator.SpendRequest, At: time.Now(), Cost: coordinator.Cost{USD: usd, Tokens: 10}}})
	}
	require.NoError(t, spend(b, 600_000))
	require.NoError(t, spend(b, 500_000))
	b1.Await(bot, "ESCALATE db budget db spent $1.10 of $1.00 (110%)")
	require.NoError(t, stop())
	assert.Error(t, spend(b, 1), "a stopped bot takes no spend")

	b, stop = runBot(t, cfg, id)
	b1.Say("STATUS db")
	status, _ := b1.Await(bot, "STATUS db")
	assert.Contains(t, status, "spent=$1.10 tokens=20 budget=$1.00", "nothing lost across the restart")
	v, err := b.View(ctx)
	require.NoError(t, err)
	assert.Equal(t, coordinator.Cost{USD: 1_100_000, Tokens: 20}, v.Spent)
	op.Say("BUDGET db +1")
	b1.Await(bot, "ACK db "+b1.ID+" budget set by "+op.ID)
	require.NoError(t, stop())
	replayRecording(t, cfg.Record)
}

// Spend is recorded as the engine was handed it, so the recording replays
// to the same figures: a counter that started before the build and
// restarted (also before it) counts whole after the restart, and a point
// an exporter sent again counts once, live and in the replay alike (times
// before the build were written as its start, so the replay saw one start
// and counted the restart as a retry).
func TestSpendBeforeTheBuildReplays(t *testing.T) {
	r := roomtest.Start(t)
	b1 := r.Join(t, "b1")
	id, err := agentchat.NewIdentity("foreman")
	require.NoError(t, err)
	cfg := fastConfig(t, r.URL(), t.TempDir(), coordinator.Component{Name: "db"})
	cfg.Rules.CheckinInterval = time.Hour // no TIMEOUT on a loaded machine before the spend
	bot := id.AgentID()
	b, stop := runBot(t, cfg, id)
	ctx := context.Background()

	b1.Await(bot, "TASKS db")
	b1.Say("CLAIM db")
	b1.Await(bot, "ACK db "+b1.ID)
	now := time.Now()
	point := func(start time.Time, usd int64) coordinator.Spend {
		return coordinator.Spend{Agent: b1.ID, Source: coordinator.SpendCumulative, At: now, Series: "claude_code.cost.usage#1",
			Start: start, Cost: coordinator.Cost{USD: usd}}
	}
	require.NoError(t, b.Spend(ctx, []coordinator.Spend{point(now.Add(-2*time.Hour), 500_000)}))
	require.NoError(t, b.Spend(ctx, []coordinator.Spend{point(now.Add(-time.Hour), 200_000)}))   // restarted: whole
	require.NoError(t, b.Spend(ctx, []coordinator.Spend{point(now.Add(-time.Hour), 200_000)}))   // sent again: nothing
	require.NoError(t, b.Spend(ctx, []coordinator.Spend{point(now.Add(-2*time.Hour), 400_000)})) // the old counter's, late: nothing
	b1.Say("STATUS db")
	status, _ := b1.Await(bot, "STATUS db")
	assert.Contains(t, status, "spent=$0.70 tokens=0")
	require.NoError(t, stop())
	replayRecording(t, cfg.Record)
}
