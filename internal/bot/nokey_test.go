package bot

import (
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// The embedded room, like a stock server with lurking off, lets an agent
// without a key send once it has joined. foreman knows it by the id the
// room gave it, as it knows every agent.
func TestAgentWithoutAKeyIsKnownByItsID(t *testing.T) {
	r := roomtest.Start(t)
	watcher := r.Join(t, "watcher")
	id := newID(t)
	runBot(t, fastConfig(t, r.URL(), t.TempDir(), coordinator.Component{Name: "db"}), id)
	watcher.Await(id.AgentID(), "TASKS db")

	ws, _, err := websocket.DefaultDialer.Dial(r.URL(), nil)
	require.NoError(t, err)
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	require.NoError(t, ws.WriteJSON(map[string]string{"type": "IDENTIFY", "name": "nokey"}))
	var agentID string
	for agentID == "" {
		var f map[string]any
		require.NoError(t, ws.ReadJSON(&f))
		if f["type"] == "WELCOME" {
			agentID = f["agent_id"].(string)
		}
	}
	require.NoError(t, ws.WriteJSON(map[string]string{"type": "JOIN", "channel": "#build"}))
	require.NoError(t, ws.WriteJSON(map[string]string{"type": "MSG", "to": "#build", "content": "CLAIM db"}))
	ack, _ := watcher.Await(id.AgentID(), "ACK db")
	assert.Equal(t, "ACK db "+agentID, ack)
}
