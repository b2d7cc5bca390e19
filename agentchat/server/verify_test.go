package server_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/agentchat/internal/chattest"
	"github.com/agentforeman/foreman/agentchat/server"
)

// seeded is an identity whose private key the test holds, to sign what the
// identity's own methods do not.
func seeded(name string, b byte) (*agentchat.Identity, ed25519.PrivateKey) {
	var seed [ed25519.SeedSize]byte
	seed[0] = b
	return agentchat.IdentityFromSeed(name, seed), ed25519.NewKeyFromSeed(seed[:])
}

func signedIn(t *testing.T, s *server.Server, id *agentchat.Identity, name string) *chattest.Peer {
	p := dial(t, s)
	p.SignIn(id, name)
	settle(p)
	return p
}

func TestVerifyingAnotherAgentsKey(t *testing.T) {
	s := start(t, server.Config{})
	asker := signedIn(t, s, newIdentity(t, "verifier"), "verifier")
	targetID, key := seeded("target", 1)
	target := signedIn(t, s, targetID, "target")
	settle(asker)
	nonce := "test-nonce-12345678"

	asker.Send(obj{"type": "VERIFY_REQUEST", "target": target.ID, "nonce": nonce})
	ack := asker.Expect("VERIFY_REQUEST")
	assert.Regexp(t, `^verify_[0-9a-z]+_[0-9a-f]{8}$`, ack["request_id"])
	assert.Equal(t, obj{"type": "VERIFY_REQUEST", "ts": ack["ts"], "request_id": ack["request_id"], "target": target.ID, "status": "pending"}, ack)
	req := target.Expect("VERIFY_REQUEST")
	assert.Equal(t, obj{"type": "VERIFY_REQUEST", "ts": req["ts"], "request_id": ack["request_id"], "from": asker.ID, "nonce": nonce}, req)

	target.Send(obj{"type": "VERIFY_RESPONSE", "request_id": req["request_id"], "nonce": nonce,
		"sig": base64.StdEncoding.EncodeToString(ed25519.Sign(key, []byte(nonce)))})
	ok := asker.Expect("VERIFY_SUCCESS")
	assert.Equal(t, obj{"type": "VERIFY_SUCCESS", "ts": ok["ts"], "request_id": ack["request_id"], "agent": target.ID, "pubkey": targetID.PublicPEM()}, ok)
	assert.Equal(t, true, target.Expect("VERIFY_SUCCESS")["verified"])

	// A wrong signature fails for both.
	asker.Send(obj{"type": "VERIFY_REQUEST", "target": target.ID, "nonce": nonce})
	req = target.Expect("VERIFY_REQUEST")
	target.Send(obj{"type": "VERIFY_RESPONSE", "request_id": req["request_id"], "nonce": nonce, "sig": "invalid-signature-not-base64!"})
	failed := asker.Expect("VERIFY_FAILED")
	assert.Equal(t, "Signature verification failed", failed["reason"])
	assert.Equal(t, target.ID, failed["target"])
	assert.Equal(t, false, target.Expect("VERIFY_FAILED")["verified"])
	target.Send(obj{"type": "VERIFY_RESPONSE", "request_id": req["request_id"], "nonce": nonce, "sig": "x"})
	assert.Equal(t, "Verification request not found or expired", target.ExpectError("VERIFICATION_EXPIRED")["message"])
}

func TestVerificationRefusals(t *testing.T) {
	s := start(t, server.Config{VerifyTimeout: 50 * time.Millisecond})
	stranger := dial(t, s)
	stranger.Send(obj{"type": "VERIFY_REQUEST", "target": "@someagent", "nonce": "test-nonce-12345678"})
	stranger.ExpectError("AUTH_REQUIRED")

	asker := signedIn(t, s, newIdentity(t, "verifier"), "verifier")
	asker.Send(obj{"type": "VERIFY_REQUEST", "target": "@nonexistent", "nonce": "test-nonce-12345678"})
	assert.Equal(t, "Agent @nonexistent not found", asker.ExpectError("AGENT_NOT_FOUND")["message"])
	asker.Send(obj{"type": "VERIFY_REQUEST", "target": "@x", "nonce": "short"})
	assert.Equal(t, "Nonce must be 16-128 characters", asker.ExpectError("INVALID_MSG")["message"])

	eph := dial(t, s)
	eph.Send(obj{"type": "IDENTIFY", "name": "nokey"})
	eph.ID = eph.Expect("WELCOME")["agent_id"].(string)
	asker.Send(obj{"type": "VERIFY_REQUEST", "target": eph.ID, "nonce": "test-nonce-12345678"})
	assert.Equal(t, "Agent "+eph.ID+" has no persistent identity", asker.ExpectError("NO_PUBKEY")["message"])
	eph.Send(obj{"type": "VERIFY_RESPONSE", "request_id": "verify_x", "nonce": "n", "sig": "s"})
	assert.Equal(t, "Responding to verification requires persistent identity", eph.ExpectError("SIGNATURE_REQUIRED")["message"])

	// Only the target may answer, with the nonce it was given; an
	// unanswered request times out.
	target := signedIn(t, s, newIdentity(t, "target"), "target")
	asker.Send(obj{"type": "VERIFY_REQUEST", "target": target.ID, "nonce": "test-nonce-12345678"})
	req := target.Expect("VERIFY_REQUEST")
	asker.Send(obj{"type": "VERIFY_RESPONSE", "request_id": req["request_id"], "nonce": "test-nonce-12345678", "sig": "s"})
	assert.Equal(t, "You are not the target of this verification", asker.ExpectError("INVALID_MSG")["message"])
	target.Send(obj{"type": "VERIFY_RESPONSE", "request_id": req["request_id"], "nonce": "another-nonce-1234", "sig": "s"})
	assert.Equal(t, "Nonce mismatch", target.ExpectError("INVALID_MSG")["message"])
	failed := asker.Expect("VERIFY_FAILED")
	assert.Equal(t, obj{"type": "VERIFY_FAILED", "ts": failed["ts"], "request_id": req["request_id"], "target": target.ID, "reason": "Verification timed out"}, failed)
}
