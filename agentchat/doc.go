// Package agentchat is foreman's transport: a client for one channel of an
// AgentChat server (github.com/tjamescouch/agentchat), and the Ed25519
// identity it signs in with. The embedded server in agentchat/server speaks
// the same protocol for local use and tests.
//
// The client connects, signs in, joins its channel and stays there:
//
//	c := agentchat.New(agentchat.Config{URL: url, Channel: "#build", Identity: id, CreateChannel: true})
//	go c.Run(ctx) // reconnects with backoff; returns a *ServerError when retrying cannot help
//	for e := range c.Events() {
//		switch e := e.(type) {
//		case agentchat.Joined: // catch up on e.History (own messages have Self set)
//		case agentchat.Message: // a room message, never one of the client's own
//		case agentchat.Delivered: // the room has the lines e.Seqs
//		}
//	}
//	c.Send(agentchat.Line{Seq: 1, Text: "TASKS api web"})
//
// Sending follows the room's rules: at most one message per rate period,
// queued lines batched into one message (split on line boundaries at
// MaxMessage, ESCALATE and ERROR lines first), one message in flight until
// its echo confirms it, and nothing dropped: a message refused as too fast
// goes again, lines wait out disconnects and a new identity's lurk period,
// and a message whose echo a disconnect swallowed is looked for in the
// replayed history before it is sent again.
package agentchat
