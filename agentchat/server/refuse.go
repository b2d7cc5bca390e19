package server

import "time"

// Features this server does not host. Each frame is still read and checked
// as a stock server checks it, and refused with the error a stock server
// gives for a feature that is off (private channels, file transfer,
// moderation without an admin key, ...), so that a stock client shows the
// refusal instead of failing on "Unknown message type".

// The refusals for the features a stock server always hosts, worded as it
// words its own switched-off features.
const (
	proposalsOff = "Proposals are disabled on this server"
	disputesOff  = "Disputes are disabled on this server"
	skillsOff    = "Skills are disabled on this server"
)

// refuseAlways answers text to anyone, signed in or not, as a stock server
// does for file transfer, invitations and moderation.
func refuseAlways(text string) func(*Server, *conn, raw) {
	return func(_ *Server, c *conn, _ raw) {
		c.send(errorFrame(errInvalidMsg, text))
	}
}

// refuseSignedIn answers text to a signed-in agent.
func refuseSignedIn(text string) func(*Server, *conn, raw) {
	return func(_ *Server, c *conn, _ raw) {
		if c.agent == nil {
			c.send(errorFrame(errAuthRequired, "Must IDENTIFY first"))
			return
		}
		c.send(errorFrame(errInvalidMsg, text))
	}
}

// refuseSigned answers text to a signed-in agent with a key that may send,
// after the checks a stock server makes first: an ephemeral agent is told
// it needs a key (needKey), a lurking one when it may act (unlocks, "" for
// features a stock server does not hold back from lurkers).
func refuseSigned(needKey, unlocks, text string) func(*Server, *conn, raw) {
	return func(s *Server, c *conn, _ raw) {
		a := c.agent
		switch {
		case a == nil:
			c.send(errorFrame(errAuthRequired, "Must IDENTIFY first"))
		case a.pubkey == "":
			c.send(errorFrame("SIGNATURE_REQUIRED", needKey))
		case unlocks != "" && s.lurking(a, time.Now()):
			c.send(errorFrame(errLurkMode, s.lurkText(a, unlocks)))
		default:
			c.send(errorFrame(errInvalidMsg, text))
		}
	}
}

// refuseAdmin: this server has no admin key, so none is right.
func refuseAdmin(_ *Server, c *conn, _ raw) {
	c.send(errorFrame(errAuthRequired, "Invalid admin key"))
}

// adminAllowlist answers the allowlist's admin frames: a stock server
// without an allowlist says so; with one (Config.Allowed) but no admin
// key, the key is wrong.
func (s *Server) adminAllowlist(c *conn, r raw) {
	switch typ, _ := r.str("type"); {
	case len(s.allowed) == 0:
		c.send(errorFrame(errInvalidMsg, "Allowlist not configured"))
	case typ == "ADMIN_LIST":
		c.send(errorFrame(errAuthRequired, "Invalid admin key"))
	default:
		c.send(errorFrame(errAuthRequired, "invalid admin key"))
	}
}

// captchaResponse: this server never asks a captcha, so there is none to
// answer, as on a stock server with captchas off.
func (s *Server) captchaResponse(c *conn, _ raw) {
	if c.agent != nil || c.holding {
		c.send(errorFrame(errInvalidMsg, "Already identified"))
		return
	}
	c.send(errorFrame("CAPTCHA_EXPIRED", "Captcha not found or expired"))
}
