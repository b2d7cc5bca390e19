package realagents

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/agentchat/server"
	"github.com/agentforeman/foreman/internal/mcpagent"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// How long a waiting agent takes to hear of news for it (issue 46): from
// a line said into the room by a peer playing foreman (TASKS, then a
// REVIEW, in turn) to the result of the agent's wait() call, through the
// real stdio transport: foreman mcp is a child process started by the MCP
// SDK's CommandTransport, as an agent's CLI starts it, in an embedded room
// paced at 1 ms without a flood limit, the peer not pacing itself. Each op is one event; ms-median and ms-p95 are the
// figures (docs/PERFORMANCE.md; make bench-wake).
func BenchmarkEventToWait(b *testing.B) {
	// The peer's client paces itself under the room's rate and the stock
	// flood limit (about three frames a second, sustained): that is the
	// sender's pacing, not the way to the agent, so this room and this
	// peer lift it (foreman's own client paces its lines the same way).
	room := roomtest.StartWith(b, func(c *server.Config) { c.RateLimit = time.Millisecond; c.FloodFrames = 1 << 20 })
	fm := room.JoinWith(b, "foreman", func(c *agentchat.Config) { c.FloodLimit, c.RateLimit = -1, -1 })
	key := b.TempDir() + "/ada.json"
	me := roomtest.Identity(b, bin, "", "--identity", key, "--name", "ada")
	cmd := exec.Command(bin, "mcp", "--identity", key, "--url", room.URL(), "--rate-limit", "1ms", "--coordinator", fm.ID)
	cmd.Env, cmd.Stderr = roomtest.CleanEnv(), &roomtest.SyncBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench-agent", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(b, err, "%s", cmd.Stderr)
	defer cs.Close()
	// wait calls wait() and reads its result; called off the benchmark's
	// goroutine, it returns what went wrong.
	wait := func() (w mcpagent.WaitResult, at time.Time, err error) {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{"timeout_seconds": patience.Seconds()}})
		at = time.Now()
		if err != nil {
			return w, at, err
		}
		if res.IsError {
			return w, at, fmt.Errorf("wait(): %v", res.Content)
		}
		raw, err := json.Marshal(res.StructuredContent)
		if err == nil {
			err = json.Unmarshal(raw, &w)
		}
		return w, at, err
	}
	// The agent is in the room once the first line comes to it.
	fm.Say("TASKS db")
	w, _, err := wait()
	require.NoError(b, err)
	require.NotEmpty(b, w.Events)

	lines := []string{"TASKS db api", "REVIEW db " + fm.ID + " bo/db"}
	var took []time.Duration
	b.ResetTimer()
	for i := range b.N {
		line := lines[i%len(lines)]
		type waited struct {
			w   mcpagent.WaitResult
			at  time.Time
			err error
		}
		out := make(chan waited, 1)
		go func() { w, at, err := wait(); out <- waited{w, at, err} }()
		said := time.Now()
		fm.Say(line)
		got := <-out
		require.NoError(b, got.err)
		require.Len(b, got.w.Events, 1, "%s", me)
		require.Equal(b, line, got.w.Events[0].Text)
		took = append(took, got.at.Sub(said))
	}
	b.StopTimer()
	slices.Sort(took)
	ms := func(q float64) float64 {
		return float64(took[int(q*float64(len(took)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(0.5), "ms-median")
	b.ReportMetric(ms(0.95), "ms-p95")
	b.ReportMetric(ms(1), "ms-max")
}

// Through foreman mcp's stdio, as a client that subscribes sees it: news
// for an agent that is not in wait() comes as
// notifications/resources/updated for foreman://inbox, and the resource
// holds it until wait() takes it.
func TestNewsReachesASubscribedClient(t *testing.T) {
	room := roomtest.Start(t)
	fm := room.Join(t, "foreman")
	key := t.TempDir() + "/ada.json"
	roomtest.Identity(t, bin, "", "--identity", key, "--name", "ada")
	cmd := exec.Command(bin, "mcp", "--identity", key, "--url", room.URL(), "--rate-limit", roomtest.Pace.String(), "--coordinator", fm.ID)
	stderr := &roomtest.SyncBuffer{}
	cmd.Env, cmd.Stderr = roomtest.CleanEnv(), stderr
	told := make(chan string, 10)
	acked := make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "subscriber", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { told <- r.Params.URI },
	})
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				acked <- struct{}{}
			}
			return next(ctx, method, req)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, "%s", stderr)
	defer cs.Close()
	require.NoError(t, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: mcpagent.InboxURI}))
	select {
	case <-acked:
	case <-ctx.Done():
		t.Fatal("the subscription was not acknowledged")
	}
	// foreman mcp may join after the line is said: the room replays it on
	// JOIN, and it is news all the same.
	fm.Say("TASKS db")
	select {
	case uri := <-told:
		require.Equal(t, mcpagent.InboxURI, uri)
	case <-ctx.Done():
		t.Fatalf("not told; %s", stderr)
	}
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpagent.InboxURI})
	require.NoError(t, err)
	require.Contains(t, res.Contents[0].Text, `"text":"TASKS db"`)
}
