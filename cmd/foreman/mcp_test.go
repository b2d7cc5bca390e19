package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
