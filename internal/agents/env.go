package agents

import (
	"strings"

	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/mcpconfig"
	"github.com/agentforeman/foreman/internal/otlp"
)

// EnvIdentity names the agent's key file in its environment.
const EnvIdentity = config.EnvIdentity

// ExporterEnv is the environment an agent's own process needs to report
// its spend to foreman's OTLP receiver at endpoint (docs/BUDGETS.md),
// with its token made from secret (telemetry.secret's bytes, loaded once
// by the caller, who serves the receiver with the same); without either,
// nothing. foreman mcp --print-config prints it.
func ExporterEnv(endpoint string, secret []byte, agentID string) []string {
	if endpoint == "" || secret == nil {
		return nil
	}
	return otlp.Env(endpoint, agentID, otlp.Token(secret, agentID))
}

// agentEnv is the agent's environment: foreman's (but for its FOREMAN_
// settings), with its own HOME (and CODEX_HOME in it) and TMPDIR, its
// key, the room, the config, what it was granted (its exporter's and its
// push's), then its env: from the config.
func agentEnv(base []string, w Workspace, url, file string, granted []string, own map[string]string) []string {
	set := append(mcpconfig.Env(w.Home), "TMPDIR="+w.Tmp, EnvIdentity+"="+w.Key,
		"FOREMAN_SERVER_URL="+url, "FOREMAN_CONFIG="+file)
	set = append(set, granted...)
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
		// foreman's own settings stay foreman's: how it signs in to NATS
		// (FOREMAN_NATS_PASSWORD, _TOKEN) and any key it was given by a
		// variable; an agent gets only those set above.
		if k, _, _ := strings.Cut(kv, "="); !names[k] && !strings.HasPrefix(k, "FOREMAN_") {
			out = append(out, kv)
		}
	}
	return append(out, set...)
}

// WriteMCP writes foreman mcp (mcpCommand) as the MCP server "foreman"
// where Claude Code, Codex and gemini-cli read theirs when started in
// w's clone with w's HOME, approved there (internal/mcpconfig): whichever
// of them the agent's command is finds it. It returns what it wrote there
// (mcpconfig.WriteAll).
func WriteMCP(w Workspace, mcpCommand []string) ([]string, error) {
	return mcpconfig.WriteAll(w.Work, w.Home, mcpconfig.Server{Command: mcpCommand[0], Args: mcpCommand[1:]})
}
