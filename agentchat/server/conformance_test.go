package server_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat/internal/chattest"
	"github.com/agentforeman/foreman/agentchat/server"
)

// The conformance table: every client frame type the wire notes list
// (docs/agentchat-wire.md, "Client frames") sent to the embedded server,
// with the answer a stock server gives. A type added to the notes without
// a row here fails the test, and so does a row whose answer is wrong.
//
// Each row is sent by alice, a keyed agent signed in and in #build with
// bob, unless from says otherwise ("anon": a connection not signed in;
// "eph": an agent without a key, signed in and in #build). reply is the
// next frame alice gets and others the next one bob gets (fields that must
// match); nil means nothing at all.

type conformance struct {
	from   string
	frame  obj
	reply  obj
	others obj
}

func refused(code, msg string) obj { return obj{"type": "ERROR", "code": code, "message": msg} }

const (
	proposalsOff = "Proposals are disabled on this server"
	disputesOff  = "Disputes are disabled on this server"
	skillsOff    = "Skills are disabled on this server"
	adminKey     = "Invalid admin key"
)

// conformanceRows are the rows by frame type. alice and bob stand for
// their agent ids in frames and answers.
func conformanceRows() map[string][]conformance {
	return map[string][]conformance{
		"IDENTIFY": {
			{from: "anon", frame: obj{"type": "IDENTIFY", "name": "newcomer"}, reply: obj{"type": "WELCOME", "name": "newcomer", "lurk": true}},
			{frame: obj{"type": "IDENTIFY", "name": "again"}, reply: refused("INVALID_MSG", "Already identified")},
		},
		"VERIFY_IDENTITY": {
			{from: "anon", frame: obj{"type": "VERIFY_IDENTITY", "challenge_id": "chal_x", "signature": "c2ln", "timestamp": 1},
				reply: refused("VERIFICATION_EXPIRED", "Challenge not found or expired")},
			{frame: obj{"type": "VERIFY_IDENTITY", "challenge_id": "chal_x", "signature": "c2ln", "timestamp": 1},
				reply: refused("INVALID_MSG", "Already identified")},
		},
		"JOIN": {{frame: obj{"type": "JOIN", "channel": "#build"}, reply: obj{"type": "JOINED", "channel": "#build"}}},
		"LEAVE": {{frame: obj{"type": "LEAVE", "channel": "#build"}, reply: obj{"type": "LEFT", "channel": "#build"},
			others: obj{"type": "AGENT_LEFT", "channel": "#build", "agent": "alice"}}},
		"MSG": {
			{frame: obj{"type": "MSG", "to": "#build", "content": "hi"}, reply: obj{"type": "MSG", "from": "alice", "content": "hi"},
				others: obj{"type": "MSG", "from": "alice", "content": "hi"}},
			{from: "eph", frame: obj{"type": "MSG", "to": "#build", "content": "no key"}, reply: obj{"type": "MSG", "content": "no key"},
				others: obj{"type": "MSG", "content": "no key"}},
			{frame: obj{"type": "MSG", "to": "@bob", "content": "psst"},
				reply: refused("INVALID_MSG", "Direct messages are disabled. Use a channel instead.")},
		},
		"LIST_CHANNELS":  {{frame: obj{"type": "LIST_CHANNELS"}, reply: obj{"type": "CHANNELS"}}},
		"LIST_AGENTS":    {{frame: obj{"type": "LIST_AGENTS", "channel": "#build"}, reply: obj{"type": "AGENTS", "channel": "#build"}}},
		"CREATE_CHANNEL": {{frame: obj{"type": "CREATE_CHANNEL", "channel": "#new"}, reply: refused("AUTH_REQUIRED", "Only verified agents can create channels")}},
		"INVITE": {{frame: obj{"type": "INVITE", "channel": "#build", "agent": "bob"},
			reply: refused("INVALID_MSG", "Private channels are disabled on this server")}},
		"PING": {{frame: obj{"type": "PING"}, reply: obj{"type": "PONG"}}},
		"SET_PRESENCE": {
			{frame: obj{"type": "SET_PRESENCE", "status": "away", "status_text": "brb"},
				others: obj{"type": "PRESENCE_CHANGED", "agent_id": "alice", "name": "alice", "presence": "away", "status_text": "brb"}},
			{from: "anon", frame: obj{"type": "SET_PRESENCE", "status": "away"}, reply: refused("AUTH_REQUIRED", "Must IDENTIFY first")},
		},
		"SET_NICK": {{frame: obj{"type": "SET_NICK", "nick": "alicia"},
			reply:  obj{"type": "NICK_CHANGED", "agent_id": "alice", "old_nick": "alice", "new_nick": "alicia"},
			others: obj{"type": "NICK_CHANGED", "agent_id": "alice", "old_nick": "alice", "new_nick": "alicia"}}},
		"TYPING": {{frame: obj{"type": "TYPING", "channel": "#build"},
			others: obj{"type": "TYPING", "from": "alice", "from_name": "alice", "channel": "#build"}}},
		"RESPONDING_TO": {
			{frame: obj{"type": "RESPONDING_TO", "msg_id": "m1", "channel": "#build", "started_at": 1000},
				others: obj{"type": "FLOOR_CLAIMED", "msg_id": "m1", "channel": "#build", "holder": "alice", "holder_name": "alice", "started_at": 1000.0}},
			{frame: obj{"type": "RESPONDING_TO", "msg_id": "m1", "channel": "#nowhere", "started_at": 1000}},
		},
		"VERIFY_REQUEST": {{frame: obj{"type": "VERIFY_REQUEST", "target": "bob", "nonce": "0123456789abcdef"},
			reply:  obj{"type": "VERIFY_REQUEST", "target": "bob", "status": "pending"},
			others: obj{"type": "VERIFY_REQUEST", "from": "alice", "nonce": "0123456789abcdef"}}},
		"VERIFY_RESPONSE": {{frame: obj{"type": "VERIFY_RESPONSE", "request_id": "verify_x", "nonce": "n", "sig": "s"},
			reply: refused("VERIFICATION_EXPIRED", "Verification request not found or expired")}},
		"CAPTCHA_RESPONSE": {
			{from: "anon", frame: obj{"type": "CAPTCHA_RESPONSE", "captcha_id": "c", "answer": "4"}, reply: refused("CAPTCHA_EXPIRED", "Captcha not found or expired")},
			{frame: obj{"type": "CAPTCHA_RESPONSE", "captcha_id": "c", "answer": "4"}, reply: refused("INVALID_MSG", "Already identified")},
		},
		"FILE_CHUNK": {{frame: obj{"type": "FILE_CHUNK", "to": "bob", "content": "chunk"}, reply: refused("INVALID_MSG", "File transfers are disabled.")}},
		"PROPOSAL": {
			{frame: obj{"type": "PROPOSAL", "to": "bob", "task": "t", "sig": "s"}, reply: refused("INVALID_MSG", proposalsOff)},
			{from: "eph", frame: obj{"type": "PROPOSAL", "to": "bob", "task": "t", "sig": "s"},
				reply: refused("SIGNATURE_REQUIRED", "Proposals require persistent identity")},
		},
		"ACCEPT":          {{frame: obj{"type": "ACCEPT", "proposal_id": "p", "sig": "s"}, reply: refused("INVALID_MSG", proposalsOff)}},
		"REJECT":          {{frame: obj{"type": "REJECT", "proposal_id": "p", "sig": "s"}, reply: refused("INVALID_MSG", proposalsOff)}},
		"COMPLETE":        {{frame: obj{"type": "COMPLETE", "proposal_id": "p", "sig": "s"}, reply: refused("INVALID_MSG", proposalsOff)}},
		"DISPUTE":         {{frame: obj{"type": "DISPUTE", "proposal_id": "p", "reason": "r", "sig": "s"}, reply: refused("INVALID_MSG", proposalsOff)}},
		"DISPUTE_INTENT":  {{frame: obj{"type": "DISPUTE_INTENT", "proposal_id": "p", "reason": "r", "commitment": "c", "sig": "s"}, reply: refused("INVALID_MSG", disputesOff)}},
		"DISPUTE_REVEAL":  {{frame: obj{"type": "DISPUTE_REVEAL", "proposal_id": "p", "nonce": "n", "sig": "s"}, reply: refused("INVALID_MSG", disputesOff)}},
		"EVIDENCE":        {{frame: obj{"type": "EVIDENCE", "dispute_id": "d", "items": []any{}, "statement": "s", "sig": "s"}, reply: refused("INVALID_MSG", disputesOff)}},
		"ARBITER_ACCEPT":  {{frame: obj{"type": "ARBITER_ACCEPT", "dispute_id": "d", "sig": "s"}, reply: refused("INVALID_MSG", disputesOff)}},
		"ARBITER_DECLINE": {{frame: obj{"type": "ARBITER_DECLINE", "dispute_id": "d"}, reply: refused("INVALID_MSG", disputesOff)}},
		"ARBITER_VOTE": {{frame: obj{"type": "ARBITER_VOTE", "dispute_id": "d", "verdict": "mutual", "reasoning": "r", "sig": "s"},
			reply: refused("INVALID_MSG", disputesOff)}},
		"REGISTER_SKILLS": {{frame: obj{"type": "REGISTER_SKILLS", "skills": []any{obj{"capability": "go"}}, "sig": "s"}, reply: refused("INVALID_MSG", skillsOff)}},
		"SEARCH_SKILLS":   {{frame: obj{"type": "SEARCH_SKILLS", "query": obj{}}, reply: refused("INVALID_MSG", skillsOff)}},
		"ADMIN_APPROVE":   {{frame: obj{"type": "ADMIN_APPROVE", "pubkey": "k", "admin_key": "k"}, reply: refused("INVALID_MSG", "Allowlist not configured")}},
		"ADMIN_REVOKE":    {{frame: obj{"type": "ADMIN_REVOKE", "agent_id": "x", "admin_key": "k"}, reply: refused("INVALID_MSG", "Allowlist not configured")}},
		"ADMIN_LIST":      {{frame: obj{"type": "ADMIN_LIST", "admin_key": "k"}, reply: refused("INVALID_MSG", "Allowlist not configured")}},
		"ADMIN_KICK":      {{frame: obj{"type": "ADMIN_KICK", "agent_id": "x", "admin_key": "k"}, reply: refused("INVALID_MSG", "Moderation not configured (no admin key)")}},
		"ADMIN_BAN":       {{frame: obj{"type": "ADMIN_BAN", "agent_id": "x", "admin_key": "k"}, reply: refused("INVALID_MSG", "Moderation not configured (no admin key)")}},
		"ADMIN_UNBAN":     {{frame: obj{"type": "ADMIN_UNBAN", "agent_id": "x", "admin_key": "k"}, reply: refused("INVALID_MSG", "Moderation not configured (no admin key)")}},
		"ADMIN_MOTD":      {{frame: obj{"type": "ADMIN_MOTD", "admin_key": "k", "motd": "hi"}, reply: refused("AUTH_REQUIRED", adminKey)}},
		"ADMIN_VERIFY":    {{frame: obj{"type": "ADMIN_VERIFY", "admin_key": "k", "agent_id": "x", "verified": true}, reply: refused("AUTH_REQUIRED", adminKey)}},
		// A stock server answers "Unknown message type" here (its check
		// misses the type its handler serves); this is that handler's answer.
		"ADMIN_OPEN_WINDOW": {{frame: obj{"type": "ADMIN_OPEN_WINDOW", "admin_key": "k"}, reply: refused("AUTH_REQUIRED", adminKey)}},
	}
}

// wireNotesFrames reads the client frame types the wire notes list.
func wireNotesFrames(t *testing.T) []string {
	t.Helper()
	notes, err := os.ReadFile("../../docs/agentchat-wire.md")
	require.NoError(t, err)
	text := strings.Join(strings.Fields(string(notes)), " ")
	m := regexp.MustCompile(`The stock server accepts these client frame types \(anything else: [^)]*\): ([A-Z_, ]+)\.`).FindStringSubmatch(text)
	require.NotNil(t, m, "the wire notes no longer list the client frame types where this test looks for them")
	var types []string
	for _, typ := range strings.Split(m[1], ",") {
		types = append(types, strings.TrimSpace(typ))
	}
	require.Greater(t, len(types), 30, "the list looks cut short: %v", types)
	return types
}

func TestConformanceTableCoversTheWireNotes(t *testing.T) {
	listed := map[string]bool{}
	for _, typ := range wireNotesFrames(t) {
		listed[typ] = true
		assert.NotEmpty(t, conformanceRows()[typ], "the wire notes list %s but the conformance table has no row for it", typ)
	}
	for typ := range conformanceRows() {
		assert.True(t, listed[typ], "the conformance table has %s, which the wire notes do not list", typ)
	}
}

func TestConformance(t *testing.T) {
	rows := conformanceRows()
	for _, typ := range wireNotesFrames(t) {
		for i, row := range rows[typ] {
			t.Run(typ+"/"+string(rune('a'+i)), func(t *testing.T) {
				t.Parallel()
				runConformance(t, row)
			})
		}
	}
}

func runConformance(t *testing.T, row conformance) {
	s := start(t, server.Config{Channels: withBuild()})
	alice := member(t, s, "alice")
	bob := member(t, s, "bob")
	ids := map[string]string{"alice": alice.ID, "bob": bob.ID}
	from := alice
	switch row.from {
	case "anon":
		from = dial(t, s)
	case "eph":
		from = dial(t, s)
		from.Send(obj{"type": "IDENTIFY", "name": "nokey"})
		from.ID = from.Expect("WELCOME")["agent_id"].(string)
		from.Join("#build")
		settle(from)
	}
	settle(alice)
	settle(bob)

	from.Send(withIDs(row.frame, ids))
	expectNext(t, from, row.reply, ids, "the sender")
	expectNext(t, bob, row.others, ids, "another member")
}

// settle reads what is queued for p up to the answer to a PING.
func settle(p *chattest.Peer) {
	p.Send(obj{"type": "PING"})
	p.Expect("PONG")
}

// expectNext checks p's next frame (server notices aside) against want, or
// that nothing comes before the answer to a PING when want is nil.
func expectNext(t *testing.T, p *chattest.Peer, want obj, ids map[string]string, who string) {
	t.Helper()
	if want == nil {
		expectFrames(t, p, ids, who)
		return
	}
	expectFrames(t, p, ids, who, want)
}

// expectFrames checks p's next frames (server notices aside) against
// wants, and that nothing more comes before the answer to a PING.
func expectFrames(t *testing.T, p *chattest.Peer, ids map[string]string, who string, wants ...obj) {
	t.Helper()
	for _, want := range wants {
		got := nextFrame(p)
		for k, v := range withIDs(want, ids) {
			assert.Equal(t, v, got[k], "%s got %v", who, got)
		}
	}
	p.Send(obj{"type": "PING"})
	got := nextFrame(p)
	assert.Equal(t, "PONG", got["type"], "%s got %v where nothing more was due", who, got)
}

func nextFrame(p *chattest.Peer) obj {
	for {
		if f := p.Read(); !(f["type"] == "MSG" && f["from"] == "@server") {
			return f
		}
	}
}

// withIDs puts the agents' ids where a row names them.
func withIDs(f obj, ids map[string]string) obj {
	out := obj{}
	for k, v := range f {
		if s, ok := v.(string); ok && ids[s] != "" && k != "name" && k != "from_name" && k != "old_nick" && k != "new_nick" && k != "holder_name" {
			v = ids[s]
		}
		out[k] = v
	}
	return out
}
