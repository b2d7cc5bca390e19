package realagents

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// bin is the foreman binary, built once for the package.
var bin string

func TestMain(m *testing.M) { roomtest.RunWithForeman(m, &bin) }

// patience bounds every wait: the machine may be busy. Nothing here
// measures speed.
const patience = 2 * time.Minute

// build is a room, a config for it and `foreman run` coordinating it.
type build struct {
	t      *testing.T
	room   *roomtest.Room
	dir    string
	config string
	run    *roomtest.Proc
	// foreman is foreman's sender id.
	foreman string
}

// startBuild starts a room with foreman serve, writes a config for it with
// the components and rules given (YAML lines under rules:), starts
// `foreman run` on it and waits for its first TASKS, heard by watcher.
func startBuild(t *testing.T, rules, mcpKeepalive string, comps ...string) (*build, *roomtest.Peer) {
	t.Helper()
	b := &build{t: t, dir: t.TempDir()}
	b.config = filepath.Join(b.dir, "foreman.yaml")
	config := func(url string) {
		var cfg strings.Builder
		cfg.WriteString("server:\n  url: " + url + "\n  rate_limit: " + roomtest.Pace.String() + "\n")
		cfg.WriteString("build:\n  name: shop\n  components:\n")
		for _, c := range comps {
			cfg.WriteString("    - name: " + c + "\n")
		}
		cfg.WriteString("rules:\n  max_build_time: 0\n" + rules)
		cfg.WriteString("journal:\n  path: journal\nhttp:\n  listen: \"\"\n")
		cfg.WriteString("mcp:\n  keepalive: " + mcpKeepalive + "\n")
		require.NoError(t, os.WriteFile(b.config, []byte(cfg.String()), 0o644))
	}
	// serve reads the config once, before it binds a free port; everyone
	// after it reads the room's URL from the config.
	config("ws://127.0.0.1:1")
	serve := b.start("serve", "--listen", "127.0.0.1:0", "--buffer-size", "5000", b.config)
	url := serve.Await(t, `listening on (ws://127\.0\.0\.1:\d+)`)
	config(url)
	b.room = roomtest.At(url, roomtest.Pace)
	watcher := b.room.Join(t, "watcher")
	b.foreman = identity(t, b.config)
	b.run = b.start("run", "--log-level", "warn", b.config)
	watcher.Await(b.foreman, "TASKS")
	return b, watcher
}

// identity creates (or reads) an identity file with foreman identity and
// returns its sender id.
func identity(t *testing.T, args ...string) string { return roomtest.Identity(t, bin, "", args...) }

func (b *build) start(args ...string) *roomtest.Proc {
	b.t.Helper()
	return roomtest.StartProc(b.t, bin, b.dir, nil, args...)
}

// agent is `foreman mcp` for one agent, driven by the MCP SDK's client.
type agent struct {
	t      *testing.T
	id     string
	cs     *mcp.ClientSession
	stderr *roomtest.SyncBuffer
}

// mcpAgent starts `foreman mcp` as an MCP client would, with a key file
// of its own and the build's config.
func (b *build) mcpAgent(name string, args ...string) *agent {
	t := b.t
	t.Helper()
	key := filepath.Join(b.dir, name+".json")
	id := identity(t, "--identity", key, "--name", name)
	cmd := exec.Command(bin, append([]string{"mcp", "--identity", key, b.config}, args...)...)
	stderr := &roomtest.SyncBuffer{}
	cmd.Dir, cmd.Env, cmd.Stderr = b.dir, roomtest.CleanEnv(), stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return &agent{t: t, id: id, cs: cs, stderr: stderr}
}

// call calls a tool and reads its structured result into out.
func (a *agent) call(name string, args map[string]any, out any) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	res, err := a.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(a.t, err, "%s %v", name, args)
	require.False(a.t, res.IsError, "%s %v: %v", name, args, res.Content)
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(a.t, err)
	require.NoError(a.t, json.Unmarshal(raw, out), "%s", raw)
}
