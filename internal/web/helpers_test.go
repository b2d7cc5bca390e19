package web

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/bot"
)

// fakeSource is a bot the tests set by hand.
type fakeSource struct {
	mu      sync.Mutex
	view    coordinator.View
	viewErr error
	health  bot.Health
	stats   agentchat.Stats
	views   atomic.Int64 // View calls
}

func (f *fakeSource) View(ctx context.Context) (coordinator.View, error) {
	f.views.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return coordinator.View{}, err
	}
	if f.viewErr != nil {
		return coordinator.View{}, f.viewErr
	}
	v := f.view
	v.Components = append([]coordinator.ComponentView(nil), f.view.Components...)
	return v, nil
}

func (f *fakeSource) Health() bot.Health {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.health
}

func (f *fakeSource) RoomStats() agentchat.Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

func (f *fakeSource) set(fn func(f *fakeSource)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// shopView is a small build in mid-flight.
func shopView() coordinator.View {
	return coordinator.View{
		Build: "shop", At: t0, StartedAt: t0, Started: true, Merged: 1,
		Components: []coordinator.ComponentView{
			{Name: "db", State: "merged", Progress: 100, BuiltBy: "@b1"},
			{Name: "api", State: "building", Deps: []string{"db"}, Owner: "@b2", Progress: 40, HasProgress: true,
				Next: "timeout", Deadline: t0.Add(30 * time.Minute), Audits: "0/3"},
			{Name: "web", State: "held", Deps: []string{"api"}, Owner: "@b3", Escalation: "hard-blocker"},
			{Name: "docs", State: "pending", Deps: []string{"web"}, Waits: []string{"web"}},
		},
	}
}

func healthy() bot.Health {
	return bot.Health{Connected: true, Joined: true, LastEvent: t0}
}

// newTestServer serves s over a real listener, for the endpoints a browser
// or `foreman status` would use.
func newTestServer(t *testing.T, s *Server) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	s.addr.Store(ts.Listener.Addr()) // where it listens, as Serve knows it
	return ts
}

func get(t *testing.T, url string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, body
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	code, h, body := get(t, url)
	require.Equal(t, "application/json", h.Get("Content-Type"))
	require.NoError(t, json.Unmarshal(body, v), string(body))
	return code
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return ln
}
