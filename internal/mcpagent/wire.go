package mcpagent

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/protocol"
)

// Reply is one of foreman's replies, read into its parts: the JSON form
// that `foreman agent --json` prints and the MCP tools return. Only the
// fields of its verb are set (docs/AGENTS.md, "foreman agent --json").
type Reply struct {
	Verb string `json:"verb" jsonschema:"the reply verb: TASKS ACK REJECT TIMEOUT RETRY ESCALATE REVIEW FIX WAIT UNBLOCKED MERGED COMPLETE STATUS OK ERROR"`
	// Component is what the line is about; "build" for a build-level
	// ESCALATE or ERROR.
	Component string `json:"component,omitempty" jsonschema:"the component the line is about (build for build-level ESCALATE and ERROR)"`
	// Agent is the sender id the line names; for an ERROR about a
	// malformed line, the sender who said it.
	Agent      string            `json:"agent,omitempty" jsonschema:"the sender id the line names (ERROR: whose line was malformed)"`
	Components []string          `json:"components,omitempty" jsonschema:"TASKS: the claimable components in order (absent: none)"`
	Build      string            `json:"build,omitempty" jsonschema:"COMPLETE: the build's name"`
	Code       string            `json:"code,omitempty" jsonschema:"ESCALATE: the escalation code"`
	Attempt    int               `json:"attempt,omitempty" jsonschema:"FIX: the failed attempt n of n/max"`
	Max        int               `json:"max,omitempty" jsonschema:"FIX: the attempts allowed"`
	Dep        string            `json:"dep,omitempty" jsonschema:"WAIT: what the component waits for"`
	PR         string            `json:"pr,omitempty" jsonschema:"REVIEW: the PR or branch to audit"`
	State      string            `json:"state,omitempty" jsonschema:"STATUS: pending building blocked ci review held or merged"`
	Fields     map[string]string `json:"fields,omitempty" jsonschema:"STATUS: the key=value fields (owner progress next in audits ...)"`
	// Text is the free text at the end: TASKS's note (who must claim
	// again), ACK's context, REJECT's reason, FIX's findings, ESCALATE's
	// what-and-suggestion, ERROR's text, OK's command.
	Text string `json:"text,omitempty" jsonschema:"the free text at the end: TASKS's note (claim again: the ids whose CLAIM came before foreman joined), ACK's context, REJECT's reason, FIX's findings, ESCALATE's text, ERROR's text, OK's command"`
}

// replyOf turns a reply as read into its JSON form.
func replyOf(h protocol.Heard) *Reply {
	r := &Reply{Verb: h.Verb.String(), Component: h.Subject, Agent: h.Agent, Components: h.Components,
		Code: string(h.Code), Attempt: h.Attempt, Max: h.Max, Dep: h.Dep, PR: h.PR, State: h.State, Text: h.Text}
	switch {
	case h.Verb == protocol.ReplyComplete:
		r.Build, r.Component = h.Subject, ""
	case h.Verb == protocol.ReplyError && protocol.ValidAgent(h.Subject):
		r.Agent, r.Component = h.Subject, ""
	}
	if len(h.Fields) > 0 {
		r.Fields = make(map[string]string, len(h.Fields))
		for _, f := range h.Fields {
			r.Fields[f.Key] = f.Value
		}
	}
	return r
}

// Agent is a member of the room.
type Agent struct {
	ID   string `json:"id" jsonschema:"the sender id"`
	Name string `json:"name,omitempty" jsonschema:"the display name"`
}

// Event kinds.
const (
	KindHello        = "hello"        // the agent's own id, before it joins
	KindJoined       = "joined"       // in the channel (again, after a reconnect)
	KindLine         = "line"         // one line of a room message
	KindAgentJoined  = "agent_joined" // someone joined the channel
	KindAgentLeft    = "agent_left"   // someone left it
	KindDisconnected = "disconnected" // the connection dropped; the client reconnects
	KindNote         = "note"         // from this program, not the room (foreman mcp's own notices)
)

// Event is one thing that happened in the room, as JSON: one line of
// `foreman agent --json`, and what wait() returns. Times are the room's.
type Event struct {
	Kind string `json:"type" jsonschema:"hello joined line agent_joined agent_left disconnected or note"`
	// TS is the room's time of the message (or join); absent on hello and
	// note.
	TS          time.Time `json:"ts,omitzero" jsonschema:"the room's time of the message, RFC 3339"`
	MsgID       string    `json:"msg_id,omitempty" jsonschema:"the room's message id; the lines of one message share it"`
	From        string    `json:"from,omitempty" jsonschema:"the sender id"`
	FromName    string    `json:"from_name,omitempty" jsonschema:"the sender's display name"`
	Coordinator bool      `json:"coordinator,omitempty" jsonschema:"said by foreman: a decision"`
	Self        bool      `json:"self,omitempty" jsonschema:"said by this agent (shown once the room has it)"`
	Replay      bool      `json:"replay,omitempty" jsonschema:"from the room's history, said before this agent joined or while it was away"`
	// Again: foreman sent the line again after a restart; one already
	// acted on needs nothing more.
	Again bool   `json:"again,omitempty" jsonschema:"foreman sent it again after a restart: may repeat one already seen"`
	Text  string `json:"text,omitempty" jsonschema:"the line, or the note"`
	Reply *Reply `json:"reply,omitempty" jsonschema:"foreman's reply read into its parts"`
	// Handoff is a host's handoff line for this agent, read (contract
	// section 10): the work a departed builder left, pinned for it.
	Handoff *Handoff `json:"handoff,omitempty" jsonschema:"a host's handoff line for you, read: the pinned ref and commit to start from"`

	ID      string  `json:"id,omitempty" jsonschema:"hello and joined: this agent's sender id"`
	Name    string  `json:"name,omitempty" jsonschema:"hello: this agent's display name"`
	URL     string  `json:"url,omitempty" jsonschema:"hello: the room's URL"`
	Channel string  `json:"channel,omitempty" jsonschema:"hello and joined: the channel"`
	Agents  []Agent `json:"agents,omitempty" jsonschema:"joined: who is in the channel"`
	Agent   *Agent  `json:"agent,omitempty" jsonschema:"agent_joined and agent_left: who"`
	Error   string  `json:"error,omitempty" jsonschema:"disconnected: why"`
}

// Reader turns the room's traffic into Events: it knows the agent's own id
// and learns foreman's, so that foreman's lines are read as replies.
type Reader struct {
	Self string
	// Coordinator is foreman's sender id: given, or learned from the first
	// message stamped by a foreman, or the sender of the first TASKS.
	Coordinator string
	Name        string // the agent's display name, for mentions
	// Hosts are the CI role's sender ids (roles.ci): only their handoff
	// lines are read. Empty: anyone's but foreman's and the agent's own.
	Hosts []string
}

// Handoff is the work a departed builder left on a component this agent
// now builds (contract section 10): the branch foreman's ACK named, and
// the host's pin of its tip once the host says it.
type Handoff struct {
	Component string `json:"component,omitempty" jsonschema:"the component"`
	Branch    string `json:"branch,omitempty" jsonschema:"where the last builder pushed its work, as foreman's ACK named it"`
	Ref       string `json:"ref,omitempty" jsonschema:"the host's pin of that work, refs/foreman/handoff/<c>/<n>: fetch it from the host's repository; a force-push cannot lose it"`
	Commit    string `json:"commit,omitempty" jsonschema:"the commit the pin holds: start your branch from it"`
	From      string `json:"from,omitempty" jsonschema:"the builder who left it"`
}

// handoff reads a line as a host's handoff line for this agent, from a
// sender it may come from.
func (r *Reader) handoff(from, line string) *protocol.Handoff {
	if from == r.Self || from == r.Coordinator || len(r.Hosts) > 0 && !slices.Contains(r.Hosts, from) {
		return nil
	}
	h, ok := protocol.ReadHandoff(line)
	if !ok || h.To != r.Self {
		return nil
	}
	return &h
}

// Message reads one room message into one Event per line. Server notices
// and stamps are not lines.
func (r *Reader) Message(m agentchat.Message) []Event {
	if m.Notice {
		return nil
	}
	if r.Coordinator == "" && m.Stamp != nil && strings.HasPrefix(m.Stamp.Tag, "foreman ") {
		r.Coordinator = m.From
	}
	var out []Event
	for l := range protocol.Lines(m.Body()) {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if r.Coordinator == "" && protocol.VerbOf(l) == protocol.ReplyTasks && m.From != r.Self {
			r.Coordinator = m.From
		}
		e := Event{Kind: KindLine, TS: m.TS, MsgID: m.ID, From: m.From, FromName: m.FromName,
			Self: m.Self || m.From == r.Self, Replay: m.Replay, Text: l}
		if m.From == r.Coordinator && m.From != r.Self {
			e.Coordinator = true
			e.Again = m.Stamp != nil && m.Stamp.Again
			if h, err := protocol.ReadReply(l); err == nil {
				e.Reply = replyOf(h)
			}
		} else if h := r.handoff(m.From, l); h != nil {
			e.Handoff = &Handoff{Component: h.Component, Branch: h.Branch, Ref: h.Ref, Commit: h.Commit, From: h.From}
		}
		out = append(out, e)
	}
	return out
}

// Said is the Event for the agent's own line, once the room has it.
func (r *Reader) Said(text string, d agentchat.Delivered, name string) Event {
	return Event{Kind: KindLine, TS: d.TS, MsgID: d.MsgID, From: r.Self, FromName: name, Self: true, Text: text}
}

// Mentions reports whether a line names the agent: its sender id, or its
// display name after an @.
func (r *Reader) Mentions(text string) bool {
	if r.Self != "" && strings.Contains(text, r.Self) {
		return true
	}
	return r.Name != "" && containsWord(text, "@"+r.Name)
}

func containsWord(s, w string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		end := i + j + len(w)
		if end == len(s) || !isNameByte(s[end]) {
			return true
		}
		i = end
	}
}

func isNameByte(c byte) bool {
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// Agents lists the room's members as JSON.
func Agents(in []agentchat.Agent) []Agent {
	out := make([]Agent, 0, len(in))
	for _, a := range in {
		out = append(out, Agent{ID: a.ID, Name: a.Name})
	}
	return out
}

// percentLeft reads the progress an ACK's context hands over ("after
// TIMEOUT of @x: progress 40%").
func percentLeft(context string) (int, bool) {
	_, rest, ok := strings.Cut(context, "progress ")
	if !ok {
		return 0, false
	}
	n, _, ok := strings.Cut(rest, "%")
	if !ok {
		return 0, false
	}
	p, err := strconv.Atoi(n)
	if err != nil || p < 0 || p > 100 {
		return 0, false
	}
	return p, true
}
