package agents

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/otlp"
)

// EnvIdentity names the agent's key file in its environment.
const EnvIdentity = config.EnvIdentity

// ExporterEnv is the environment an agent's own process needs to report
// its spend to foreman (docs/BUDGETS.md), when telemetry.secret and
// http.listen are set; else nothing. foreman mcp --print-config prints it.
func ExporterEnv(c *config.Config, agentID string) ([]string, error) {
	if c.Telemetry.Secret == "" || c.HTTP == "" {
		return nil, nil
	}
	secret, err := otlp.LoadSecret(c.Telemetry.Secret)
	if err != nil {
		return nil, fmt.Errorf("telemetry.secret: %w", err)
	}
	return otlp.Env("http://"+c.HTTP, agentID, otlp.Token(secret, agentID)), nil
}

// agentEnv is the agent's environment: foreman's, with its own HOME and
// TMPDIR, its key, the room, the config, its exporter's, then its env:
// from the config.
func agentEnv(base []string, w Workspace, url, file string, exporter []string, own map[string]string) []string {
	set := []string{"HOME=" + w.Home, "TMPDIR=" + w.Tmp, EnvIdentity + "=" + w.Key,
		"FOREMAN_SERVER_URL=" + url, "FOREMAN_CONFIG=" + file}
	set = append(set, exporter...)
	for k, v := range own {
		set = append(set, k+"="+v)
	}
	names := map[string]bool{}
	for _, kv := range set {
		k, _, _ := strings.Cut(kv, "=")
		names[k] = true
	}
	var out []string
	for _, kv := range base {
		if k, _, _ := strings.Cut(kv, "="); !names[k] {
			out = append(out, kv)
		}
	}
	return append(out, set...)
}

// WriteClaudeMCP writes Claude Code's project MCP config, .mcp.json in
// the directory it starts in, naming foreman mcp as the server "foreman".
// The other CLIs' formats are internal/mcpconfig's.
func WriteClaudeMCP(workspace string, mcpCommand []string, env map[string]string) error {
	type server struct {
		Type    string            `json:"type"`
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env,omitempty"`
	}
	doc := map[string]map[string]server{"mcpServers": {"foreman": {Type: "stdio", Command: mcpCommand[0], Args: mcpCommand[1:], Env: env}}}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(workspace, ".mcp.json"), append(b, '\n'), 0o600)
}
