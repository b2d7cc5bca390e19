package demo

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/bot"
	"github.com/agentforeman/foreman/protocol"
	"github.com/agentforeman/foreman/transcript"
)

// testMinute is as fast as the room lets the story stay the same: below
// about 40ms the AgentChat client's flood guard (2.5 messages a second once
// a burst is spent) delays foreman's replies by several contract minutes.
const testMinute = 50 * time.Millisecond

// has reports whether some line of lines starts with prefix.
func has(lines []string, prefix string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

func TestDemoTellsTheWholeStory(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	var onBot *bot.Bot
	observed := 0
	res, err := Run(context.Background(), Options{
		Minute: testMinute, Seed: 1, Out: &out, Dir: dir,
		OnBot:   func(b *bot.Bot) { onBot = b },
		Observe: func(*coordinator.Event, []coordinator.Reply) { observed++ },
	})
	require.NoError(t, err, out.String())
	require.True(t, res.Complete, out.String())
	require.NotNil(t, onBot, "OnBot is called with the bot")
	assert.Positive(t, observed, "Observe is passed to the bot")

	who := map[string]string{} // sender id by name
	for _, e := range res.Room {
		who[e.Name] = e.From
	}
	at := func(name string) string { return who[name] }

	rejects := res.Said(protocol.ReplyReject)
	assert.True(t, has(rejects, "REJECT db "+at("bea")+" owned by "+at("ada")), "the claim race's loser is refused: %q", rejects)
	timeouts := res.Said(protocol.ReplyTimeout)
	assert.Contains(t, timeouts, "TIMEOUT catalog "+at("cal"))
	acks := res.Said(protocol.ReplyAck)
	assert.True(t, has(acks, "ACK catalog "+at("ada")+" after TIMEOUT of "+at("cal")), "%q", acks)
	fixes := res.Said(protocol.ReplyFix)
	assert.True(t, has(fixes, "FIX auth "+at("bea")+" 1/2 no tests for token refresh"), "%q", fixes)
	assert.Contains(t, res.Said(protocol.ReplyRetry), "RETRY cart "+at("dex"))
	assert.True(t, has(acks, "ACK cart "+at("cal")+" after RETRY of "+at("dex")), "%q", acks)
	assert.Contains(t, res.Said(protocol.ReplyWait), "WAIT mailer "+at("cal")+" web")
	assert.Contains(t, res.Said(protocol.ReplyUnblocked), "UNBLOCKED mailer "+at("cal"))
	escalations := res.Said(protocol.ReplyEscalate)
	require.Len(t, escalations, 1, "the hard blocker is the only escalation")
	assert.True(t, has(escalations, "ESCALATE payments hard-blocker invalid_specification:"), "%q", escalations)
	assert.True(t, has(res.Said(protocol.ReplyOK), "OK RESOLVE payments"))
	assert.True(t, has(acks, "ACK payments "+at("dex")+" after ABORT by "+at("bea")), "%q", acks)
	assert.Len(t, res.Said(protocol.ReplyMerged), 7)
	assert.Equal(t, []string{"COMPLETE bookshop"}, res.Said(protocol.ReplyComplete))

	assert.Equal(t, 7, res.Merges)
	assert.Equal(t, 1, res.Retries)
	assert.Equal(t, 1, res.Escalations)
	assert.Positive(t, res.Contract)
	assert.Contains(t, out.String(), "bookshop complete: 7 components merged")
	assert.Contains(t, out.String(), "REJECT db @bea owned by @ada", "ids are shown as names")
	assert.NotContains(t, out.String(), "\x1b[", "no colour unless asked")

	_, err = Run(context.Background(), Options{Dir: dir})
	assert.ErrorContains(t, err, "already holds a demo's journal", "a kept directory is not reused")

	// The recording replays: the live bot said exactly what the engine says.
	f, err := os.Open(filepath.Join(dir, "bookshop.txt"))
	require.NoError(t, err)
	defer f.Close()
	tr, err := transcript.Parse("bookshop.txt", f)
	require.NoError(t, err)
	rep, err := transcript.Replay(tr)
	require.NoError(t, err)
	if !rep.Passed() {
		var diff bytes.Buffer
		rep.WriteDiff(&diff)
		t.Fatalf("the recording does not replay:\n%s", diff.String())
	}
}
