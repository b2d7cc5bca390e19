// Package realagents drives foreman as real agents' clients do, with the
// foreman binary: `foreman mcp` over stdio with the MCP SDK's client (as
// Claude Code would start it), and a builder written against `foreman agent
// --json` alone, each against an embedded room and `foreman run`. It has
// only tests.
package realagents
