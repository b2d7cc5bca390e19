package agentchat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// frame is any server frame; only the fields the client reads.
type frame struct {
	Type    string `json:"type"`
	TS      int64  `json:"ts"`
	Code    string `json:"code"`
	Message string `json:"message"`

	// WELCOME
	AgentID    string `json:"agent_id"`
	Name       string `json:"name"`
	Verified   bool   `json:"verified"`
	Lurk       bool   `json:"lurk"`
	LurkUntil  int64  `json:"lurk_until"`
	LurkReason string `json:"lurk_reason"`

	// CHALLENGE
	ChallengeID string `json:"challenge_id"`
	Nonce       string `json:"nonce"`

	// JOINED, AGENT_JOINED, AGENT_LEFT
	Channel string          `json:"channel"`
	Agents  json.RawMessage `json:"agents"`
	Agent   string          `json:"agent"`

	// MSG
	From     string `json:"from"`
	FromName string `json:"from_name"`
	To       string `json:"to"`
	Content  string `json:"content"`
	MsgID    string `json:"msg_id"`
	Replay   bool   `json:"replay"`

	// SESSION_DISPLACED
	Reason string `json:"reason"`

	bad string // why the frame could not be read, if it could not
}

const serverSender = "@server"

// usedFrames are the server frames the client acts on. Every other type
// (PRESENCE_CHANGED, TYPING, FLOOR_CLAIMED, YIELD, NICK_CHANGED, AGENTS,
// VERIFY_REQUEST, ...) is read past without a word: a stock server sends
// them to every member, and a log line each would drown the log.
var usedFrames = map[string]bool{
	"WELCOME": true, "CHALLENGE": true, "MSG": true, "JOINED": true, "AGENT_JOINED": true,
	"AGENT_LEFT": true, "ERROR": true, "PONG": true, "SESSION_DISPLACED": true,
}

// decodeFrame reads one server frame. A frame of a type the client does
// not use is read for its type only, so that a field it would read
// differently (another server version's) cannot make it look broken.
func decodeFrame(data []byte) *frame {
	f := new(frame)
	err := json.Unmarshal(data, f)
	if err == nil {
		return f
	}
	var typ struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(data, &typ) == nil && typ.Type != "" && !usedFrames[typ.Type] {
		return &frame{Type: typ.Type}
	}
	return &frame{bad: fmt.Sprintf("%v: %.200s", err, bytes.TrimSpace(data))}
}

func msTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

func (f *frame) message(self string) Message {
	m := Message{
		ID:       f.MsgID,
		From:     f.From,
		FromName: f.FromName,
		To:       f.To,
		Content:  f.Content,
		Verified: f.Verified,
		TS:       msTime(f.TS),
		Replay:   f.Replay,
		Notice:   f.From == serverSender,
		Self:     self != "" && f.From == self,
	}
	if !m.Notice {
		if st, _, ok := ParseStamp(m.Content); ok {
			m.Stamp = &st
		}
	}
	return m
}

// key identifies a message across replays. Notices carry no msg_id, but
// their time, sender and text are as good.
func (m *Message) key() string {
	if m.ID != "" {
		return m.ID
	}
	return m.TS.Format(time.RFC3339Nano) + "|" + m.From + "|" + m.Content
}

// agents reads JOINED's list: objects after JOIN, bare ids after
// CREATE_CHANNEL.
func (f *frame) agents() []Agent {
	var objs []struct {
		ID       string `json:"id"`
		Name     string `json:"name"`
		Verified bool   `json:"verified"`
	}
	if json.Unmarshal(f.Agents, &objs) == nil {
		out := make([]Agent, 0, len(objs))
		for _, o := range objs {
			out = append(out, Agent{ID: o.ID, Name: o.Name, Verified: o.Verified})
		}
		return out
	}
	var ids []string
	if json.Unmarshal(f.Agents, &ids) == nil {
		out := make([]Agent, 0, len(ids))
		for _, id := range ids {
			out = append(out, Agent{ID: id})
		}
		return out
	}
	return nil
}

// Client frames.
type (
	identifyFrame struct {
		Type   string `json:"type"`
		Name   string `json:"name"`
		Pubkey string `json:"pubkey,omitempty"`
	}
	verifyFrame struct {
		Type        string `json:"type"`
		ChallengeID string `json:"challenge_id"`
		Signature   string `json:"signature"`
		Timestamp   int64  `json:"timestamp"`
	}
	channelFrame struct {
		Type    string `json:"type"`
		Channel string `json:"channel"`
	}
	msgFrame struct {
		Type    string `json:"type"`
		To      string `json:"to"`
		Content string `json:"content"`
	}
	typeFrame struct {
		Type string `json:"type"`
	}
)
