package agentchat_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/agentchat/internal/chattest"
	"github.com/agentforeman/foreman/agentchat/server"
)

// Present looks with no key of its own, for a caller that has one: it
// finds the keyed member in the room, and the caller's log says nothing
// of a missing key (foreman mcp warned an agent with its key that it had
// none, issue 48).
func TestPresentSaysNothingOfAKeyTheCallerHas(t *testing.T) {
	s := chattest.Start(t, server.Config{Channels: chattest.WithBuild()})
	id := chattest.NewIdentity(t, "ada")
	r := run(t, agentchat.Config{URL: s.URL(), Identity: id})
	r.ready()
	var mu sync.Mutex
	var logs strings.Builder
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(p) })
	cfg := agentchat.Config{URL: s.URL(), Channel: "#build", Identity: chattest.NewIdentity(t, "ada2"),
		Logger: zerolog.New(w).Level(zerolog.DebugLevel)}
	in, err := agentchat.Present(context.Background(), cfg, id.AgentID(), time.Minute)
	require.NoError(t, err)
	assert.True(t, in, "the keyed member is seen")
	mu.Lock()
	defer mu.Unlock()
	assert.NotContains(t, logs.String(), "no identity key")
	assert.NotContains(t, logs.String(), `"level":"warn"`)
}
