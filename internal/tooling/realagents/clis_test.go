package realagents

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/mcpconfig"
	"github.com/agentforeman/foreman/internal/tooling/roomtest"
)

// agentCLIs installs testdata/clis (Claude Code, Codex and gemini-cli,
// pinned) once per machine, in the user's cache, and returns the directory
// of their programs. Without npm the test is skipped, except where
// FOREMANTEST_REQUIRE_NPM says npm must be there (CI installs it: .ci/run).
// npm runs no install script: each CLI's package brings its program
// prebuilt (Claude Code's and Codex's in a platform package), and Claude
// Code's own postinstall, which only copies its program into place, is run
// by hand.
func agentCLIs(t *testing.T) string {
	if _, err := exec.LookPath("npm"); err != nil {
		if os.Getenv("FOREMANTEST_REQUIRE_NPM") != "" {
			t.Fatalf("npm is required here: %v", err)
		}
		t.Skipf("npm is not installed here (CI installs it: .ci/run): %v", err)
	}
	// gemini-cli needs Node.js 20 or later (its package's engines); an
	// older one fails it in ways that do not say so.
	out, err := exec.Command("node", "--version").Output()
	require.NoError(t, err, "node --version (npm is here, node should be)")
	var major int
	_, err = fmt.Sscanf(string(out), "v%d.", &major)
	require.NoError(t, err, "node --version said %q", out)
	require.GreaterOrEqual(t, major, 20, "node %s: the agent CLIs need Node.js 20 or later (gemini-cli's engines); install a newer nodejs", strings.TrimSpace(string(out)))
	pkg, err := os.ReadFile("testdata/clis/package.json")
	require.NoError(t, err)
	cache, err := os.UserCacheDir()
	require.NoError(t, err)
	dir := filepath.Join(cache, "foreman", fmt.Sprintf("agent-clis-%x", sha256.Sum256(pkg))[:len("agent-clis-")+16])
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "package.json"), pkg, 0o644))
	done := filepath.Join(dir, "installed")
	if _, err := os.Stat(done); err != nil {
		start := time.Now()
		for _, step := range []struct {
			dir  string
			args []string
		}{
			{dir, []string{"npm", "install", "--no-audit", "--no-fund", "--ignore-scripts"}},
			// the one script needed: it puts Claude Code's native program
			// (from its platform package) in place of its bin's stub
			{filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code"), []string{"node", "install.cjs"}},
		} {
			cmd := exec.Command(step.args[0], step.args[1:]...)
			cmd.Dir = step.dir
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%v: %s", step.args, out)
		}
		require.NoError(t, os.WriteFile(done, nil, 0o644))
		t.Logf("npm install of the agent CLIs: %s", time.Since(start).Round(time.Second))
	}
	return filepath.Join(dir, "node_modules", ".bin")
}

// cliAgent is an agent's place as foreman up makes it: a clone of the
// target, a HOME of its own, and its MCP config written there.
type cliAgent struct {
	ws, home string
	env      []string
}

func newCLIAgent(t *testing.T, target, cli, room string) cliAgent {
	root := t.TempDir()
	a := cliAgent{ws: filepath.Join(root, "ws"), home: filepath.Join(root, "home")}
	require.NoError(t, os.Mkdir(a.home, 0o700))
	out, err := exec.Command("git", "clone", "-q", target, a.ws).CombinedOutput()
	require.NoError(t, err, "%s", out)
	key := filepath.Join(a.home, "key.json")
	roomtest.Identity(t, bin, "", "--identity", key, "--name", cli)
	_, err = mcpconfig.Write(a.ws, a.home, cli, mcpconfig.Server{Command: bin,
		Args: []string{"mcp", "--identity", key, "--url", room, "--rate-limit", roomtest.Pace.String()}})
	require.NoError(t, err)
	a.env = append(roomtest.CleanEnv(), mcpconfig.Env(a.home)...)
	// Nothing here needs the network but the room: the CLIs' own
	// telemetry and update checks are off, and anything else goes to a
	// port that refuses it.
	a.env = append(a.env, "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1",
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost")
	return a
}

// run runs one of the CLI's commands in the agent's workspace.
func (a cliAgent) run(t *testing.T, program string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.Dir, cmd.Env = a.ws, a.env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%v: %s", cmd.Args, out)
	return string(out)
}

// Issue 46: each agent CLI, installed from npm at a pinned version, run in
// an agent's workspace as foreman up makes it (a clone, a HOME of its own,
// mcpconfig.Write), lists foreman's server by its own MCP listing:
// Claude Code's health check says Connected and gemini-cli's too (both
// start foreman mcp against a real room), Codex's lists it enabled, and
// the command it lists starts and serves foreman's tools. Without the
// approval Write gives, Claude Code's server waits for a person and
// gemini-cli's is disabled in the untrusted folder.
func TestAgentCLIsListForeman(t *testing.T) {
	clis := agentCLIs(t)
	room := roomtest.Start(t)
	target := filepath.Join(t.TempDir(), "target")
	for _, args := range [][]string{{"init", "-q", "-b", "main", target},
		{"-C", target, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "start"}} {
		out, err := exec.Command("git", args...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}

	t.Run("claude", func(t *testing.T) {
		t.Parallel()
		a := newCLIAgent(t, target, mcpconfig.Claude, room.URL())
		claude := filepath.Join(clis, "claude")
		assert.Contains(t, a.run(t, claude, "--version"), "2.1.328 (Claude Code)")
		settings := filepath.Join(a.home, ".claude", "settings.json")
		aside(t, settings, func() {
			assert.Regexp(t, `(?m)^foreman: \S+ mcp .* - ⏸ Pending approval`, a.run(t, claude, "mcp", "list"), "without the approval in the agent's settings")
		})
		assert.Regexp(t, `(?m)^foreman: `+regexp.QuoteMeta(bin)+` mcp --identity .* - ✔ Connected$`, a.run(t, claude, "mcp", "list"))
	})

	t.Run("gemini", func(t *testing.T) {
		t.Parallel()
		a := newCLIAgent(t, target, mcpconfig.Gemini, room.URL())
		gemini := filepath.Join(clis, "gemini")
		assert.Equal(t, "0.61.0", strings.TrimSpace(a.run(t, gemini, "--version")))
		aside(t, filepath.Join(a.home, ".gemini", "trustedFolders.json"), func() {
			assert.Regexp(t, `(?m)^○ foreman: .* - Disabled$`, a.run(t, gemini, "mcp", "list"), "the workspace not trusted")
		})
		assert.Regexp(t, `(?m)^✓ foreman: `+regexp.QuoteMeta(bin)+` mcp --identity .* \(stdio\) - Connected$`, a.run(t, gemini, "mcp", "list"))
	})

	t.Run("codex", func(t *testing.T) {
		t.Parallel()
		a := newCLIAgent(t, target, mcpconfig.Codex, room.URL())
		codex := filepath.Join(clis, "codex")
		assert.Contains(t, a.run(t, codex, "--version"), "codex-cli 0.171.0")
		assert.Regexp(t, `(?m)^foreman\s+`+regexp.QuoteMeta(bin)+`\s+mcp --identity .*\s+enabled\s`, a.run(t, codex, "mcp", "list"))
		var listed []struct {
			Name      string `json:"name"`
			Enabled   bool   `json:"enabled"`
			Transport struct {
				Type    string            `json:"type"`
				Command string            `json:"command"`
				Args    []string          `json:"args"`
				Env     map[string]string `json:"env"`
			} `json:"transport"`
		}
		out := a.run(t, codex, "mcp", "list", "--json")
		require.NoError(t, json.Unmarshal([]byte(out[strings.Index(out, "["):]), &listed), "%s", out)
		require.Len(t, listed, 1, "%s", out)
		s := listed[0]
		assert.True(t, s.Enabled)
		assert.Equal(t, "stdio", s.Transport.Type)
		// Codex has no health check of its own: start what it lists, as it
		// would, and see foreman's tools.
		cmd := exec.Command(s.Transport.Command, s.Transport.Args...)
		cmd.Dir, cmd.Env = a.ws, a.env
		for k, v := range s.Transport.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		stderr := &roomtest.SyncBuffer{}
		cmd.Stderr = stderr
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "as-codex", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		require.NoError(t, err, "%s", stderr)
		defer cs.Close()
		tools, err := cs.ListTools(ctx, nil)
		require.NoError(t, err)
		var names []string
		for _, tl := range tools.Tools {
			names = append(names, tl.Name)
		}
		assert.Contains(t, names, "wait")
		assert.Contains(t, names, "claim")
	})
}

// aside moves path away while f runs.
func aside(t *testing.T, path string, f func()) {
	t.Helper()
	require.NoError(t, os.Rename(path, path+".aside"))
	defer func() { require.NoError(t, os.Rename(path+".aside", path)) }()
	f()
}
