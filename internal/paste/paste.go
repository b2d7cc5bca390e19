// Package paste makes what foreman prints for people to paste as it is:
// shell commands with the program's absolute path, and MCP client
// configurations that start foreman mcp. An MCP client starts foreman from
// anywhere, often without ~/go/bin on PATH, so every path is absolute.
package paste

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// Program is this program, to name in commands to paste: absolute, so
// that they work where foreman is not on PATH. A program go run built in
// a temporary directory is named as foreman.
func Program() string {
	p, err := os.Executable()
	if err != nil || strings.Contains(p, string(filepath.Separator)+"go-build") {
		return "foreman"
	}
	return p
}

// Abs is p made absolute, or p when it cannot be.
func Abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// Shell writes a command for a shell, quoting the words that need it.
func Shell(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// ChatCommand is the command that puts the holder of key in the room as a
// person at a chat client; url, if set, is the room's when it is not the
// config's.
func ChatCommand(bin, key, url, config string) []string {
	args := []string{bin, "agent", "--role", "chat", "--identity", key}
	if url != "" {
		args = append(args, "--url", url)
	}
	return append(args, config)
}

// MCPEntry is one agent's foreman mcp in an MCP client's configuration:
// the server's name there, the agent's display name ("": its key's), its
// key file.
type MCPEntry struct{ Server, Name, Key string }

// MCPConfig is an MCP client's configuration (Claude Code's .mcp.json,
// Claude Desktop's claude_desktop_config.json) that starts foreman mcp
// for each agent, with its key file and the config; url, if set, is the
// room's when it is not the config's.
func MCPConfig(bin, config, url string, agents ...MCPEntry) string {
	type server struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
	}
	doc := struct {
		Servers map[string]server `json:"mcpServers"`
	}{map[string]server{}}
	for _, e := range agents {
		args := []string{"mcp", "--identity", e.Key}
		if e.Name != "" {
			args = append(args, "--name", e.Name)
		}
		if url != "" {
			args = append(args, "--url", url)
		}
		doc.Servers[e.Server] = server{Command: bin, Args: append(args, config)}
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(doc)
	return b.String()
}
