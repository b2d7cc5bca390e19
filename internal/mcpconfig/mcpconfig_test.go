package mcpconfig

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var server = Server{Command: "/opt/foreman/bin/foreman", Args: []string{"mcp", "--identity", "/agents/ada/key.json", "/srv/foreman.yaml"},
	Env: map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer x"}}

// places makes a workspace (a git clone, as foreman up makes one) and a
// home for an agent.
func places(t *testing.T) (ws, home string) {
	root := t.TempDir()
	ws, home = filepath.Join(root, "ws"), filepath.Join(root, "home")
	require.NoError(t, os.Mkdir(home, 0o700))
	out, err := exec.Command("git", "init", "-q", ws).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return ws, home
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc), "%s", b)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "%s: the server's environment may hold a token", path)
	return doc
}

func TestClaudeCode(t *testing.T) {
	ws, home := places(t)
	require.NoError(t, os.WriteFile(filepath.Join(ws, ".mcp.json"), []byte(`{"mcpServers":{"other":{"command":"x"},"foreman":{"command":"old"}}}`), 0o644))
	require.NoError(t, writeOne(ws, home, Claude, server))
	require.NoError(t, writeOne(ws, home, Claude, server), "again: the same files")

	doc := readJSON(t, filepath.Join(ws, ".mcp.json"))
	assert.Equal(t, map[string]any{
		"other": map[string]any{"command": "x"},
		"foreman": map[string]any{"type": "stdio", "command": server.Command,
			"args": []any{"mcp", "--identity", "/agents/ada/key.json", "/srv/foreman.yaml"},
			"env":  map[string]any{"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer x"}},
	}, doc["mcpServers"], "another server stays; foreman's is replaced")
	settings := readJSON(t, filepath.Join(home, ".claude", "settings.json"))
	assert.Equal(t, []any{"foreman"}, settings["enabledMcpjsonServers"], "approved once, by name")
	assert.Equal(t, map[string]any{"allow": []any{"mcp__foreman"}}, settings["permissions"])

	out, err := exec.Command("git", "-C", ws, "status", "--porcelain", "--untracked-files=all").CombinedOutput()
	require.NoError(t, err)
	assert.Empty(t, string(out), "the agent's MCP config is not the project's: git does not see it")
}

func TestGemini(t *testing.T) {
	ws, home := places(t)
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".gemini"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".gemini", "trustedFolders.json"), []byte(`{"/elsewhere":"DO_NOT_TRUST"}`), 0o600))
	require.NoError(t, writeOne(ws, home, Gemini, Server{Name: "fm", Command: server.Command}))

	doc := readJSON(t, filepath.Join(ws, ".gemini", "settings.json"))
	assert.Equal(t, map[string]any{"fm": map[string]any{"command": server.Command, "args": []any{}, "env": map[string]any{}, "trust": true}}, doc["mcpServers"])
	real, err := filepath.EvalSymlinks(ws)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"/elsewhere": "DO_NOT_TRUST", real: "TRUST_FOLDER"}, readJSON(t, filepath.Join(home, ".gemini", "trustedFolders.json")))
	out, err := exec.Command("git", "-C", ws, "status", "--porcelain", "--untracked-files=all").CombinedOutput()
	require.NoError(t, err)
	assert.Empty(t, string(out))
}

func TestCodex(t *testing.T) {
	ws, home := places(t)
	require.NoError(t, os.MkdirAll(CodexHome(home), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(CodexHome(home), "config.toml"), []byte("model = \"o3\"\n[mcp_servers.other]\ncommand = \"x\"\n"), 0o600))
	require.NoError(t, writeOne(ws, home, Codex, server))

	b, err := os.ReadFile(filepath.Join(CodexHome(home), "config.toml"))
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, toml.Unmarshal(b, &doc), "%s", b)
	assert.Equal(t, "o3", doc["model"], "the agent's own settings stay")
	servers := doc["mcp_servers"].(map[string]any)
	assert.Equal(t, map[string]any{"command": "x"}, servers["other"])
	assert.Equal(t, map[string]any{"command": server.Command,
		"args": []any{"mcp", "--identity", "/agents/ada/key.json", "/srv/foreman.yaml"},
		"env":  map[string]any{"OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer x"}}, servers["foreman"])
	real, err := filepath.EvalSymlinks(ws)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"trust_level": "trusted"}, doc["projects"].(map[string]any)[real])
	assert.Equal(t, []string{"HOME=" + home, "CODEX_HOME=" + filepath.Join(home, ".codex")}, Env(home))
}

// Bad input: one line naming the thing, what is wrong and what to do.
func TestRefusals(t *testing.T) {
	ws, home := places(t)
	for _, c := range []struct {
		name   string
		write  func() error
		refuse string
	}{
		{"unknown CLI", func() error { return writeOne(ws, home, "opencode", server) },
			`mcpconfig: unknown agent CLI "opencode": give one of claude, codex, gemini`},
		{"relative command", func() error { return writeOne(ws, home, Claude, Server{Command: "foreman"}) },
			`mcpconfig: server command "foreman" is not an absolute path: a CLI starts it from anywhere; give foreman's full path`},
		{"bad name", func() error { return writeOne(ws, home, Codex, Server{Name: "a.b", Command: "/x"}) },
			`mcpconfig: server name "a.b": use letters, digits, _ or -`},
		{"no workspace", func() error { return writeOne(filepath.Join(ws, "nope"), home, Claude, server) },
			"(make it before writing its MCP config)"},
		{"not JSON", func() error {
			require.NoError(t, os.WriteFile(filepath.Join(ws, ".mcp.json"), []byte("{"), 0o644))
			return writeOne(ws, home, Claude, server)
		}, ".mcp.json is not a JSON object (unexpected end of JSON input): fix or remove it"},
		{"not an object", func() error {
			require.NoError(t, os.WriteFile(filepath.Join(ws, ".mcp.json"), []byte(`{"mcpServers":[]}`), 0o644))
			return writeOne(ws, home, Claude, server)
		}, ".mcp.json: mcpServers is a []interface {}, not an object: fix or remove it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.ErrorContains(t, c.write(), c.refuse)
		})
	}
}

// writeOne is Write, for a test that looks at the files themselves.
func writeOne(ws, home, cli string, s Server) error {
	_, err := Write(ws, home, cli, s)
	return err
}

// WriteAll writes every CLI's, and says what it wrote: each file, and the
// directories above it in the workspace or HOME (an agent's to own, as
// the rest of them: foreman up, as root, makes them its uid's).
func TestWriteAll(t *testing.T) {
	ws, home := places(t)
	wrote, err := WriteAll(ws, home, server)
	require.NoError(t, err)
	for _, p := range []string{filepath.Join(ws, ".mcp.json"), filepath.Join(ws, ".gemini", "settings.json"),
		filepath.Join(home, ".claude", "settings.json"), filepath.Join(home, ".gemini", "trustedFolders.json"), filepath.Join(home, ".codex", "config.toml")} {
		assert.FileExists(t, p)
	}
	ws, err = filepath.EvalSymlinks(ws)
	require.NoError(t, err)
	home, err = filepath.EvalSymlinks(home)
	require.NoError(t, err)
	var want []string
	for _, p := range []string{".git", ".git/info", ".git/info/exclude", ".mcp.json", ".gemini", ".gemini/settings.json"} {
		want = append(want, filepath.Join(ws, p))
	}
	for _, p := range []string{".claude", ".claude/settings.json", ".codex", ".codex/config.toml", ".gemini", ".gemini/trustedFolders.json"} {
		want = append(want, filepath.Join(home, p))
	}
	assert.ElementsMatch(t, want, wrote)
}
