package server

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"unicode/utf16"

	"github.com/agentforeman/foreman/agentchat"
)

// check reads a client frame of type typ the way the stock server does
// before it looks at who sent it: it says what is wrong with the frame
// (the stock server's words, sent as INVALID_MSG), or "" when nothing is.
// known is false for a type the stock server does not accept. The stock
// server checks every frame this way, signed in or not, so these answers
// come before AUTH_REQUIRED.
func check(typ string, r raw) (problem string, known bool) {
	rule, ok := rules[typ]
	if !ok {
		return "", false
	}
	if rule == nil {
		return "", true
	}
	return rule(r), true
}

// rules holds every client frame type the stock server accepts, with its
// checks; nil for a type without any.
var rules = map[string]func(raw) string{
	"IDENTIFY": func(r raw) string {
		if name, _ := r.str("name"); !validName(name) {
			return "Invalid agent name"
		}
		if r.present("pubkey") {
			pk, ok := r.str("pubkey")
			if ok {
				_, err := agentchat.ParsePublicPEM(pk)
				ok = err == nil
			}
			if !ok {
				return "Invalid public key format (must be Ed25519 PEM)"
			}
		}
		return ""
	},
	"VERIFY_IDENTITY": func(r raw) string {
		switch {
		case !r.text("challenge_id"):
			return "Missing or invalid challenge_id"
		case !r.text("signature"):
			return "Missing or invalid signature"
		case !r.nonzero("timestamp"):
			return "Missing or invalid timestamp"
		}
		return ""
	},
	"JOIN":           channelRule("Invalid channel name"),
	"LEAVE":          channelRule("Invalid channel name"),
	"LIST_AGENTS":    channelRule("Invalid channel name"),
	"CREATE_CHANNEL": channelRule("Invalid channel name"),
	"TYPING":         channelRule("Invalid channel name"),
	"LIST_CHANNELS":  nil,
	"PING":           nil,
	"MSG": func(r raw) string {
		to, _ := r.str("to")
		content, isText := r.str("content")
		_, sigText := r.str("sig")
		switch {
		case !r.truthy("to"):
			return "Missing target"
		case !strings.HasPrefix(to, "#") && !strings.HasPrefix(to, "@"):
			return "Invalid target (must start with # or @)"
		case !isText:
			return "Missing or invalid content"
		case contentTooLong(content):
			return "Content too long (max 2MB)"
		case r.present("sig") && !sigText:
			return "Invalid signature format"
		}
		return ""
	},
	"FILE_CHUNK": func(r raw) string {
		to, _ := r.str("to")
		content, isText := r.str("content")
		switch {
		case !r.truthy("to"):
			return "Missing target"
		case !strings.HasPrefix(to, "@"):
			return "FILE_CHUNK only supports DM targets (@agent)"
		case !isText:
			return "Missing or invalid content"
		case contentTooLong(content):
			return "FILE_CHUNK too large (max 2MB)"
		}
		return ""
	},
	"INVITE": func(r raw) string {
		ch, _ := r.str("channel")
		agent, _ := r.str("agent")
		switch {
		case !validChannel(ch):
			return "Invalid channel name"
		case !strings.HasPrefix(agent, "@"):
			return "Invalid agent target"
		}
		return ""
	},
	"SET_PRESENCE": func(r raw) string {
		status, _ := r.str("status")
		text, isText := r.str("status_text")
		switch {
		case !slices.Contains(presences, status):
			return "Invalid presence status. Must be one of: " + strings.Join(presences, ", ")
		case r.has("status_text") && !isText:
			return "status_text must be a string" // null included
		case jsLen(text) > 100:
			return "status_text too long (max 100 chars)"
		}
		return ""
	},
	"SET_NICK": func(r raw) string {
		nick, _ := r.str("nick")
		switch {
		case nick == "":
			return "Missing or invalid nick"
		case jsLen(nick) > 24:
			return "Nick must be 1-24 characters"
		case !nickRE.MatchString(nick):
			return "Nick must contain only alphanumeric characters, hyphens, and underscores"
		}
		return ""
	},
	"RESPONDING_TO": func(r raw) string {
		ch, _ := r.str("channel")
		switch {
		case !r.text("msg_id"):
			return "Missing or invalid msg_id"
		case !validChannel(ch):
			return "Missing or invalid channel"
		case !r.nonzero("started_at"):
			return "Missing or invalid started_at timestamp"
		}
		return ""
	},
	"VERIFY_REQUEST": func(r raw) string {
		target, _ := r.str("target")
		nonce, _ := r.str("nonce")
		switch {
		case !r.truthy("target"):
			return "Missing target agent"
		case !strings.HasPrefix(target, "@"):
			return "Target must be an agent (@id)"
		case !r.text("nonce"):
			return "Missing or invalid nonce"
		case jsLen(nonce) < 16 || jsLen(nonce) > 128:
			return "Nonce must be 16-128 characters"
		}
		return ""
	},
	"VERIFY_RESPONSE": func(r raw) string {
		switch {
		case !r.truthy("request_id"):
			return "Missing request_id"
		case !r.text("nonce"):
			return "Missing or invalid nonce"
		case !r.text("sig"):
			return "Missing or invalid signature"
		}
		return ""
	},
	"CAPTCHA_RESPONSE": func(r raw) string {
		switch {
		case !r.text("captcha_id"):
			return "Missing or invalid captcha_id"
		case !r.text("answer"):
			return "Missing or invalid answer"
		}
		return ""
	},

	// The marketplace: proposals and their outcome.
	"PROPOSAL": func(r raw) string {
		to, _ := r.str("to")
		switch {
		case !r.truthy("to"):
			return "Missing target (to)"
		case !strings.HasPrefix(to, "@"):
			return "Proposals must be sent to an agent (@id)"
		case !r.text("task"):
			return "Missing or invalid task description"
		case !r.truthy("sig"):
			return "Proposals must be signed"
		case r.has("expires") && !r.isNumber("expires"):
			return "expires must be a number (seconds)"
		}
		return stakeRule(r)
	},
	"ACCEPT": func(r raw) string {
		if p := signedProposalRule(r, "Accept"); p != "" {
			return p
		}
		return stakeRule(r)
	},
	"REJECT":   func(r raw) string { return signedProposalRule(r, "Reject") },
	"COMPLETE": func(r raw) string { return signedProposalRule(r, "Complete") },
	"DISPUTE": func(r raw) string {
		switch {
		case !r.truthy("proposal_id"):
			return "Missing proposal_id"
		case !r.text("reason"):
			return "Missing or invalid dispute reason"
		case !r.truthy("sig"):
			return "Dispute must be signed"
		}
		return ""
	},

	// Disputes before a panel of arbiters.
	"DISPUTE_INTENT": func(r raw) string {
		switch {
		case !r.truthy("proposal_id"):
			return "Missing proposal_id"
		case !r.text("reason"):
			return "Missing or invalid reason"
		case !r.text("commitment"):
			return "Missing or invalid commitment hash"
		case !r.truthy("sig"):
			return "Dispute intent must be signed"
		}
		return ""
	},
	"DISPUTE_REVEAL": func(r raw) string {
		switch {
		case !r.truthy("proposal_id"):
			return "Missing proposal_id"
		case !r.text("nonce"):
			return "Missing or invalid nonce"
		case !r.truthy("sig"):
			return "Dispute reveal must be signed"
		}
		return ""
	},
	"EVIDENCE": func(r raw) string {
		_, statement := r.str("statement")
		switch {
		case !r.text("dispute_id"):
			return "Missing or invalid dispute_id"
		case !r.isArray("items"):
			return "Missing or invalid items array"
		case !statement:
			return "Missing or invalid statement"
		case !r.truthy("sig"):
			return "Evidence must be signed"
		}
		return ""
	},
	"ARBITER_ACCEPT": func(r raw) string {
		switch {
		case !r.text("dispute_id"):
			return "Missing or invalid dispute_id"
		case !r.truthy("sig"):
			return "Arbiter accept must be signed"
		}
		return ""
	},
	"ARBITER_DECLINE": func(r raw) string {
		if !r.text("dispute_id") {
			return "Missing or invalid dispute_id"
		}
		return ""
	},
	"ARBITER_VOTE": func(r raw) string {
		verdict, _ := r.str("verdict")
		_, reasoning := r.str("reasoning")
		switch {
		case !r.text("dispute_id"):
			return "Missing or invalid dispute_id"
		case verdict != "disputant" && verdict != "respondent" && verdict != "mutual":
			return "Invalid verdict (must be disputant, respondent, or mutual)"
		case !reasoning:
			return "Missing or invalid reasoning"
		case !r.truthy("sig"):
			return "Arbiter vote must be signed"
		}
		return ""
	},

	// The skills directory.
	"REGISTER_SKILLS": func(r raw) string {
		var skills []json.RawMessage
		if !r.isArray("skills") || json.Unmarshal(r["skills"], &skills) != nil {
			return "Missing or invalid skills array"
		}
		if len(skills) == 0 {
			return "Skills array cannot be empty"
		}
		for _, s := range skills {
			var skill raw
			if json.Unmarshal(s, &skill) != nil || !skill.text("capability") {
				return "Each skill must have a capability string"
			}
		}
		if !r.truthy("sig") {
			return "Skill registration must be signed"
		}
		return ""
	},
	"SEARCH_SKILLS": func(r raw) string {
		if !r.isObject("query") {
			return "Missing or invalid query object"
		}
		return ""
	},

	// Administration with the server's admin key.
	"ADMIN_APPROVE": func(r raw) string {
		if !r.text("pubkey") {
			return "Missing or invalid pubkey"
		}
		return adminKeyRule(r)
	},
	"ADMIN_REVOKE": func(r raw) string {
		if !r.truthy("pubkey") && !r.truthy("agent_id") {
			return "Missing pubkey or agent_id"
		}
		return adminKeyRule(r)
	},
	"ADMIN_LIST":  adminKeyRule,
	"ADMIN_KICK":  adminTargetRule,
	"ADMIN_BAN":   adminTargetRule,
	"ADMIN_UNBAN": adminTargetRule,
	"ADMIN_MOTD": func(r raw) string {
		if p := adminKeyRule(r); p != "" {
			return p
		}
		if r.present("motd") {
			if _, ok := r.str("motd"); !ok {
				return "motd must be a string or null"
			}
		}
		return ""
	},
	"ADMIN_VERIFY": func(r raw) string {
		if p := adminKeyRule(r); p != "" {
			return p
		}
		if !r.text("agent_id") {
			return "Missing agent_id"
		}
		if v, ok := r["verified"]; !ok || (string(v) != "true" && string(v) != "false") {
			return "verified must be a boolean"
		}
		return ""
	},
	// The stock server's own check has no case for this type, so it
	// answers "Unknown message type" although it has a handler for it (see
	// the wire notes). The embedded server answers as that handler does.
	"ADMIN_OPEN_WINDOW": nil,
}

var presences = []string{"online", "away", "busy", "offline", "listening"}

var nickRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func channelRule(problem string) func(raw) string {
	return func(r raw) string {
		if ch, _ := r.str("channel"); !validChannel(ch) {
			return problem
		}
		return ""
	}
}

func signedProposalRule(r raw, what string) string {
	switch {
	case !r.truthy("proposal_id"):
		return "Missing proposal_id"
	case !r.truthy("sig"):
		return what + " must be signed"
	}
	return ""
}

func stakeRule(r raw) string {
	if !r.present("elo_stake") {
		return ""
	}
	var n json.Number
	if json.Unmarshal(r["elo_stake"], &n) == nil {
		if i, err := n.Int64(); err == nil && i >= 0 {
			return ""
		}
		if f, err := n.Float64(); err == nil && f >= 0 && f == float64(int64(f)) {
			return "" // 2.0 is an integer to JavaScript
		}
	}
	return "elo_stake must be a non-negative integer"
}

func adminKeyRule(r raw) string {
	if !r.text("admin_key") {
		return "Missing admin_key"
	}
	return ""
}

func adminTargetRule(r raw) string {
	if !r.text("agent_id") {
		return "Missing or invalid agent_id"
	}
	return adminKeyRule(r)
}

// jsLen is a string's length as JavaScript counts it (UTF-16 code units),
// which is how the stock server's limits count.
func jsLen(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}
