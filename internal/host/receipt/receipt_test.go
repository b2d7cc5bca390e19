package receipt

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
)

var (
	host     = agentchat.IdentityFromSeed("host", [32]byte{1})
	stranger = agentchat.IdentityFromSeed("stranger", [32]byte{2})
)

func key(t *testing.T, id *agentchat.Identity) Key {
	t.Helper()
	k, err := KeyOf(id.PublicPEM())
	require.NoError(t, err)
	return k
}

func landing(chain *Chain) Landing {
	l := Landing{Host: host.AgentID(), Target: "refs/heads/main", Component: "api", Builder: "@b1", Ref: "b1/api",
		Approved: Approval{Tip: strings.Repeat("a", 40), Auditors: []string{"@aud"}, Round: 1},
		LandedOn: strings.Repeat("b", 40), Commit: strings.Repeat("c", 40), Tree: strings.Repeat("d", 40),
		Checks: Checks{Run: 1, Kind: "car", Commit: strings.Repeat("c", 40), Tree: strings.Repeat("d", 40),
			Commands: []Command{{Command: "make test", Result: "passed"}}, Tries: []Log{}, RanOn: []string{"host"}, Sandbox: "off"},
		At: time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC), LandedAs: LandedAsMerge}
	if chain != nil {
		l.Repository, l.Chain = "shop", chain
	}
	return l
}

// A landing with its place in a chain is of version 2, one without of
// version 1; each opens with the key that signed it, and says who.
func TestReceiptsOfBothVersionsOpen(t *testing.T) {
	for _, tc := range []struct {
		chain *Chain
		kind  string
	}{{nil, PredicateTypeV1}, {&Chain{Seq: 1, Start: strings.Repeat("b", 40)}, PredicateType}} {
		s := New(landing(tc.chain))
		assert.Equal(t, tc.kind, s.PredicateType)
		note, err := Sign(s, host)
		require.NoError(t, err)
		got, signer, err := Open(note, []Key{key(t, host)})
		require.NoError(t, err)
		assert.Equal(t, host.AgentID(), signer)
		assert.Equal(t, s, got)
		assert.Equal(t, strings.Repeat("c", 40), got.Commit())
		assert.Equal(t, strings.Repeat("d", 40), got.Tree())
	}
}

// What a receipt that does not hold is, in words.
func TestAReceiptThatDoesNotHold(t *testing.T) {
	good, err := Sign(New(landing(&Chain{Seq: 2, Previous: "sha256:x"})), host)
	require.NoError(t, err)
	trusted := []Key{key(t, host)}
	var env Envelope
	require.NoError(t, json.Unmarshal(good, &env))
	edited := func(change func(*Statement)) []byte {
		body, err := base64.StdEncoding.DecodeString(env.Payload)
		require.NoError(t, err)
		var s Statement
		require.NoError(t, json.Unmarshal(body, &s))
		change(&s)
		body, err = json.Marshal(s)
		require.NoError(t, err)
		e := env
		e.Payload = base64.StdEncoding.EncodeToString(body)
		out, err := json.Marshal(e)
		require.NoError(t, err)
		return out
	}
	signedAs := func(s Statement, by *agentchat.Identity) []byte {
		out, err := Sign(s, by)
		require.NoError(t, err)
		return out
	}
	noChain := New(landing(&Chain{Seq: 1}))
	noChain.Predicate.Chain = nil
	noRepo := New(landing(&Chain{Seq: 1}))
	noRepo.Predicate.Repository = ""
	v1Chained := New(landing(nil))
	v1Chained.Predicate.Chain = &Chain{Seq: 1}
	for name, tc := range map[string]struct {
		note []byte
		want string
	}{
		"not JSON":           {[]byte("hello"), "not a receipt"},
		"another payload":    {[]byte(`{"payloadType":"text/plain","payload":"","signatures":[]}`), "payload type"},
		"unsigned":           {[]byte(`{"payloadType":"` + PayloadType + `","payload":"","signatures":[]}`), "not signed"},
		"signed by another":  {signedAs(New(landing(nil)), stranger), "which is not a trusted key"},
		"edited after":       {edited(func(s *Statement) { s.Predicate.Component = "web" }), "does not verify: the receipt was changed after it was signed"},
		"not a landing":      {signedAs(Statement{Type: StatementType, PredicateType: "https://example.com/other"}, host), "not a landing"},
		"v2 with no chain":   {signedAs(noChain, host), "names no repository, or no place in a chain"},
		"v2 with no repo":    {signedAs(noRepo, host), "names no repository, or no place in a chain"},
		"v1 with v2's field": {signedAs(v1Chained, host), "a landing of version 1 with fields of version 2"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := Open(tc.note, trusted)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// A receipt's digest is its statement's, whoever signed it: the next
// landing of a chain names it; another statement, another digest.
func TestStatementDigest(t *testing.T) {
	a, err := Sign(New(landing(&Chain{Seq: 1})), host)
	require.NoError(t, err)
	b, err := Sign(New(landing(&Chain{Seq: 1})), stranger)
	require.NoError(t, err)
	c, err := Sign(New(landing(&Chain{Seq: 2})), host)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(StatementDigest(a), "sha256:"))
	assert.Len(t, StatementDigest(a), len("sha256:")+64)
	assert.Equal(t, StatementDigest(a), StatementDigest(b), "the statement's, not the signature's")
	assert.NotEqual(t, StatementDigest(a), StatementDigest(c))
	assert.Empty(t, StatementDigest([]byte("junk")))
}

// The signed head opens with the key that signed it, and nothing else is
// taken for one.
func TestTheSignedHead(t *testing.T) {
	h := Head{Host: host.AgentID(), Repository: "shop", Target: "refs/heads/main",
		Newest: Link{Seq: 3, Digest: "sha256:x", Commit: strings.Repeat("c", 40), Start: strings.Repeat("b", 40)},
		At:     time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)}
	env, err := Sign(NewHead(h), host)
	require.NoError(t, err)
	got, signer, err := OpenHead(env, []Key{key(t, host)})
	require.NoError(t, err)
	assert.Equal(t, h, got)
	assert.Equal(t, host.AgentID(), signer)

	_, _, err = OpenHead(env, []Key{key(t, stranger)})
	assert.ErrorContains(t, err, "not a trusted key")
	receipt, err := Sign(New(landing(nil)), host)
	require.NoError(t, err)
	_, _, err = OpenHead(receipt, []Key{key(t, host)})
	assert.ErrorContains(t, err, "not a signed head")
	off := NewHead(h)
	off.Subject[0].Digest["gitCommit"] = strings.Repeat("e", 40)
	env, err = Sign(off, host)
	require.NoError(t, err)
	_, _, err = OpenHead(env, []Key{key(t, host)})
	assert.ErrorContains(t, err, "whose subject is not its newest landing")
	assert.Equal(t, "refs/foreman/head/main", HeadRef("main"))
}

// A check with a command that did not pass did not pass; none is a pass.
func TestChecksPassed(t *testing.T) {
	assert.True(t, Checks{}.Passed())
	assert.True(t, Checks{Commands: []Command{{Command: "a", Result: "passed"}}}.Passed())
	assert.False(t, Checks{Commands: []Command{{Command: "a", Result: "passed"}, {Command: "b", Result: "failed"}}}.Passed())
}
