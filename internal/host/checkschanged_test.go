package host

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/internal/host/receipt"
)

// landingReceipt approves checked c, finishes its car as given and opens
// the receipt of the landing that starts.
func (s *harness) landingReceipt(c string, car Outcome) (receipt.Landing, string) {
	s.t.Helper()
	return s.landingReceiptSaying(c, "", car)
}

// landingReceiptSaying is landingReceipt with more fields on foreman's
// STATUS line that approves c. The predicate's JSON, as the signed payload
// holds it, comes second.
func (s *harness) landingReceiptSaying(c, more string, car Outcome) (receipt.Landing, string) {
	s.t.Helper()
	s.foreman("REVIEW " + c + " @b" + c + " b/" + c)
	s.hear("@aud", "AUDIT "+c+" PASS")
	a := s.foreman("STATUS " + c + " review owner=@b" + c + " pr=b/" + c + " audits=0/3 approved=yes approved_by=@aud" + more)
	require.Len(s.t, a.Start, 1)
	a = s.finish(a.Start[0].Run, car)
	for _, j := range a.Start {
		if j.Kind == Land {
			key, err := receipt.KeyOf(testKey.PublicPEM())
			require.NoError(s.t, err)
			st, _, err := receipt.Open(j.Receipt, []receipt.Key{key})
			require.NoError(s.t, err, "a version 2 receipt that says the checks changed still opens")
			var env receipt.Envelope
			require.NoError(s.t, json.Unmarshal(j.Receipt, &env))
			body, err := base64.StdEncoding.DecodeString(env.Payload)
			require.NoError(s.t, err)
			return st.Predicate, string(body)
		}
	}
	s.t.Fatalf("no landing started: %+v", a)
	return receipt.Landing{}, ""
}

// A landing that changed the files that define the checks says so in its
// receipt, beside who built it and who approved it: the operator's fix to
// the checks lands like any change, checked by the checks it brings.
func TestTheReceiptSaysWhenALandingChangedTheChecks(t *testing.T) {
	s := trainHarness(t, 1)
	s.checked("a", "T")
	p, _ := s.landingReceipt("a", Outcome{Result: Passed, Reused: true, Commit: "m-a", Tip: "t-a", Base: "T", Tree: "tr-a",
		Chain: []Made{{Commit: "m-a", Tree: "tr-a", ChecksChanged: []string{"check.sh"}}}})
	assert.Equal(t, []string{"check.sh"}, p.ChecksChanged)
	assert.Equal(t, "@ba", p.Builder, "who built it")
	assert.Equal(t, []string{"@aud"}, p.Approved.Auditors, "who approved it")
	assert.Equal(t, receipt.PredicateType, "https://github.com/agentforeman/foreman/landing/v2")

	s = trainHarness(t, 1)
	s.checked("b", "T")
	p, raw := s.landingReceipt("b", Outcome{Result: Passed, Reused: true, Commit: "m-b", Tip: "t-b", Base: "T", Tree: "tr-b",
		Chain: []Made{{Commit: "m-b", Tree: "tr-b"}}})
	assert.Empty(t, p.ChecksChanged)
	assert.Contains(t, raw, `"builder":"@bb"`)
	assert.NotContains(t, raw, "checksChanged", "a landing that changed no check says nothing of it")
}
