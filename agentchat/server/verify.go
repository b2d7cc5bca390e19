package server

import (
	"crypto/ed25519"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/agentforeman/foreman/agentchat"
)

// One agent asking the server to check that another holds the key it
// signed in with: the server passes the asker's nonce to the target, which
// signs it; the server checks the signature and tells both.

type verification struct {
	id, nonce    string
	from         *conn
	target       string // agent id
	targetPubkey string
	timer        *time.Timer
}

func (s *Server) verifyRequest(c *conn, r raw) {
	a := c.agent
	if a == nil {
		c.send(errorFrame(errAuthRequired, "Must IDENTIFY first"))
		return
	}
	target, _ := r.str("target")
	nonce, _ := r.str("nonce")
	tc := s.byID[target]
	switch {
	case tc == nil || tc.agent == nil:
		c.send(errorFrame("AGENT_NOT_FOUND", "Agent "+target+" not found"))
		return
	case tc.agent.pubkey == "":
		c.send(errorFrame("NO_PUBKEY", "Agent "+target+" has no persistent identity"))
		return
	}
	now := time.Now()
	v := &verification{
		id: "verify_" + strconv.FormatInt(now.UnixMilli(), 36) + "_" + randomHex(4), nonce: nonce,
		from: c, target: target, targetPubkey: tc.agent.pubkey,
	}
	v.timer = s.after(s.cfg.VerifyTimeout, func() {
		if s.verifications[v.id] != v {
			return
		}
		delete(s.verifications, v.id)
		v.from.send(frame("VERIFY_FAILED", fields{"request_id": v.id, "target": v.target, "reason": "Verification timed out"}))
	})
	s.verifications[v.id] = v
	tc.send(frame("VERIFY_REQUEST", fields{"request_id": v.id, "from": a.id, "nonce": nonce}))
	c.send(frame("VERIFY_REQUEST", fields{"request_id": v.id, "target": target, "status": "pending"}))
}

func (s *Server) verifyResponse(c *conn, r raw) {
	a := c.agent
	if a == nil {
		c.send(errorFrame(errAuthRequired, "Must IDENTIFY first"))
		return
	}
	if a.pubkey == "" {
		c.send(errorFrame("SIGNATURE_REQUIRED", "Responding to verification requires persistent identity"))
		return
	}
	id, _ := r.str("request_id")
	nonce, _ := r.str("nonce")
	sig, _ := r.str("sig")
	v := s.verifications[id]
	switch {
	case v == nil:
		c.send(errorFrame(errVerificationExpired, "Verification request not found or expired"))
		return
	case v.target != a.id:
		c.send(errorFrame(errInvalidMsg, "You are not the target of this verification"))
		return
	case nonce != v.nonce:
		c.send(errorFrame(errInvalidMsg, "Nonce mismatch"))
		return
	}
	delete(s.verifications, id)
	s.cancel(v.timer)
	ok := false
	if pub, err := agentchat.ParsePublicPEM(v.targetPubkey); err == nil {
		ok = ed25519.Verify(pub, []byte(nonce), decodeBase64(sig))
	}
	if ok {
		v.from.send(frame("VERIFY_SUCCESS", fields{"request_id": id, "agent": v.target, "pubkey": v.targetPubkey}))
		c.send(frame("VERIFY_SUCCESS", fields{"request_id": id, "verified": true}))
		return
	}
	v.from.send(frame("VERIFY_FAILED", fields{"request_id": id, "target": v.target, "reason": "Signature verification failed"}))
	c.send(frame("VERIFY_FAILED", fields{"request_id": id, "verified": false}))
}

// decodeBase64 reads base64 as leniently as Node does (either alphabet,
// padded or not); what it cannot read gives no bytes, which no signature
// matches.
func decodeBase64(s string) []byte {
	s = strings.TrimRight(s, "=")
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b
		}
	}
	return nil
}
