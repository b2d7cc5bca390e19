package agentchat

import "time"

// Event is what the client reports from the room: one of Connected, Joined,
// Message, Delivered, Clock, AgentJoined, AgentLeft, ServerError,
// Disconnected.
type Event interface{ event() }

// Connected: the server accepted the identity (WELCOME).
type Connected struct {
	AgentID  string
	Name     string
	Verified bool // vetted by the server's admin, not merely keyed
	// Lurk is the server's advice that this identity may only read, until
	// LurkUntil (zero: for ever, or not said). A stock server gives it even
	// when it does not enforce it, so the client tries to send anyway and
	// only an ERROR LURK_MODE counts.
	Lurk      bool
	LurkUntil time.Time
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
	Channel string
	Agents  []Agent
	History []Message
	Created bool // the client created the channel (it had no history)
	// Replayed is how many frames the room replayed, before those already
	// delivered were left out; Overlap says some were. A replay that
	// overlaps what this client delivered reaches back past the
	// disconnect: the room lost nothing meanwhile.
	Replayed  int
	Overlap   bool
	Reconnect bool
	TS        time.Time // the server's clock when it let the client in
}

// Message is a room message in the client's channel. Notice marks the
// server's own notices (sender @server), which are never commands.
type Message struct {
	ID       string // msg_id; notices have none
	From     string
	FromName string
	To       string
	Content  string // as the room has it
	Verified bool
	TS       time.Time
	Replay   bool // from the server's history buffer
	Notice   bool
	Self     bool // sent by this identity
	// Stamp is the message's stamp, if it ends with one. Anyone may write
	// one; only on the client's own messages (Self) does it prove anything.
	Stamp *Stamp
}

// Body is the content without the sender's stamp: what a human reads.
func (m Message) Body() string {
	_, body, _ := ParseStamp(m.Content)
	return body
}

// Delivered: the room echoed one of the client's messages, which carried
// the lines with these sequence numbers.
type Delivered struct {
	Seqs  []uint64
	MsgID string
	TS    time.Time
}

// Clock: the room's time, read after every message the room had sent
// before it (the answer to Ping). No message stamped earlier is still to
// come.
type Clock struct{ TS time.Time }

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
func (Clock) event()        {}
func (AgentJoined) event()  {}
func (AgentLeft) event()    {}
func (ServerError) event()  {}
func (Disconnected) event() {}
