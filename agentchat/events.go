package agentchat

import "time"

// Event is what the client reports from the room: one of Connected, Joined,
// Message, Delivered, AgentJoined, AgentLeft, ServerError, Disconnected.
type Event interface{ event() }

// Connected: the server accepted the identity (WELCOME).
type Connected struct {
	AgentID   string
	Name      string
	Verified  bool      // vetted by the server's admin, not merely keyed
	Lurk      bool      // the server lets this identity read but not send
	LurkUntil time.Time // when sending unlocks; zero if never (ephemeral) or not lurking
	Reconnect bool
}

// Agent is a member of a channel.
type Agent struct {
	ID       string
	Name     string
	Verified bool
}

// Joined: the client is in the channel. History is the channel's replayed
// buffer, minus what this Client already delivered, oldest first; the
// client's own earlier messages are in it with Self set.
type Joined struct {
	Channel   string
	Agents    []Agent
	History   []Message
	Created   bool // the client created the channel (it had no history)
	Reconnect bool
}

// Message is a room message in the client's channel. Notice marks the
// server's own notices (sender @server), which are never commands.
type Message struct {
	ID       string // msg_id; notices have none
	From     string
	FromName string
	To       string
	Content  string
	Verified bool
	TS       time.Time
	Replay   bool // from the server's history buffer
	Notice   bool
	Self     bool // sent by this identity
}

// Delivered: the room echoed one of the client's messages, which carried
// the lines with these sequence numbers.
type Delivered struct {
	Seqs  []uint64
	MsgID string
	TS    time.Time
}

// AgentJoined: someone joined the channel.
type AgentJoined struct {
	Channel string
	Agent   Agent
}

// AgentLeft: someone left the channel or disconnected.
type AgentLeft struct {
	Channel string
	Agent   Agent
}

// Disconnected: the connection ended; the client reconnects unless Run is
// returning.
type Disconnected struct{ Err error }

func (Connected) event()    {}
func (Joined) event()       {}
func (Message) event()      {}
func (Delivered) event()    {}
func (AgentJoined) event()  {}
func (AgentLeft) event()    {}
func (ServerError) event()  {}
func (Disconnected) event() {}
