// Package mcpagent speaks foreman's protocol for one agent: the heart of
// `foreman mcp`, the MCP server an LLM agent's client starts, and the JSON
// form of the room that `foreman agent --json` prints.
//
// A Session joins the room with the agent's key (through the agentchat
// client, which paces, batches and reconnects), says the agent's lines,
// and matches foreman's answers to them: a reply about the line's
// component, addressed to the agent, after the room has the line, within
// a deadline. foreman says nothing to an accepted PROGRESS (nor to a few
// other lines), so those are sent with STATUS c, whose line is then the
// answer. What else concerns the agent (TASKS, REVIEW, FIX, TIMEOUT,
// lines that mention it...) waits in an inbox for wait(). While the agent
// owns a component that needs check-ins and says nothing, the session
// checks in for it with its last real percentage, saying so, until
// mcp.keepalive has passed since the agent's last tool call (keepalive.go,
// pure, on the times it is given).
package mcpagent
