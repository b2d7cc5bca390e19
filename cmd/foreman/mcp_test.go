package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMCPNeedsTheAgentsKey(t *testing.T) {
	code, out, errOut := foreman(t, "mcp", "--url", "ws://127.0.0.1:1")
	assert.Equal(t, 1, code)
	assert.Empty(t, out, "stdout is the MCP stream: nothing else goes there")
	assert.Contains(t, errOut, "foreman: --identity FILE is required")
}

func TestAgentJSONIsForPrograms(t *testing.T) {
	code, out, errOut := foreman(t, "agent", "--json", "--role", "builder", "--url", "ws://127.0.0.1:1")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "--json with --role builder: --json is for a program that speaks for itself")
}

func TestKeyName(t *testing.T) {
	assert.Equal(t, "ada", keyName("/home/x/.foreman/ada.json"))
	assert.Equal(t, "agent", keyName("/home/x/my key.json"))
}

// foreman mcp --print-config prints an MCP client's configuration with
// absolute paths: the key file, the config, and the room's URL when it is
// not the config's.
func TestMCPPrintsItsClientConfig(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	writeFile(t, dir, "foreman.yaml", "server:\n  channel: \"#build\"\n")
	code, out, errOut := foreman(t, "mcp", "--print-config", "--identity", ".foreman/ada.json")
	require.Equal(t, 0, code, errOut)
	var doc struct {
		Servers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	s := doc.Servers["foreman"]
	assert.Equal(t, "foreman", s.Command, "a test binary is no program to name")
	assert.Equal(t, []string{"mcp", "--identity", filepath.Join(dir, ".foreman", "ada.json"), filepath.Join(dir, "foreman.yaml")}, s.Args)

	code, out, errOut = foreman(t, "mcp", "--print-config", "--url", "ws://127.0.0.1:7000")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"--identity",`+"\n        \""+filepath.Join(dir, ".foreman", "agent.json")+`",`, "a key beside the config by default")
	assert.Contains(t, out, `"--url",`+"\n        \"ws://127.0.0.1:7000\",")
	assert.NoFileExists(t, filepath.Join(dir, ".foreman", "agent.json"), "printing makes no key")

	// An entry, and a key, per agent named: one printed config for a team,
	// two agents never on one key.
	code, out, errOut = foreman(t, "mcp", "--print-config", "--agents", "b1,b2,aud")
	require.Equal(t, 0, code, errOut)
	doc.Servers = nil
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	require.Len(t, doc.Servers, 3)
	for _, name := range []string{"b1", "b2", "aud"} {
		s := doc.Servers["foreman-"+name]
		assert.Equal(t, []string{"mcp", "--identity", filepath.Join(dir, ".foreman", name+".json"), "--name", name, filepath.Join(dir, "foreman.yaml")}, s.Args)
	}
	code, _, errOut = foreman(t, "mcp", "--print-config", "--agents", "b1,foreman")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `--agents: "foreman" is not an agent's name`)
	code, _, errOut = foreman(t, "mcp", "--print-config", "--agents", "b1", "--identity", "x.json")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "--agents and --identity: give one")
}
