package natsauth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A worker may pull from every set of its labels, and no other.
func TestLabelSets(t *testing.T) {
	sets, err := LabelSets([]string{"gpu", "linux"}, true)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"any", "gpu", "linux", "sandboxed", "gpu+linux", "gpu+sandboxed", "linux+sandboxed",
		"gpu+linux+sandboxed"}, sets)
	sets, err = LabelSets(nil, false)
	require.NoError(t, err)
	assert.Equal(t, []string{"any"}, sets)
	_, err = LabelSets([]string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, false)
	assert.ErrorContains(t, err, "at most 8")
}

// A user carries no permissions of its own: its role's scope gives them,
// with its name and label sets as tags; the account's JWT has a scoped
// key per role, each with that role's permissions.
func TestUsersAreScoped(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "foreman")
	require.NoError(t, Init(dir))
	assert.ErrorIs(t, Init(dir), ErrExists)
	creds, pub, err := Creds(dir, User{Role: RoleWorker, Name: "w1", Labels: []string{"gpu"}, Confined: true})
	require.NoError(t, err)
	kp, name, err := Seed(creds)
	require.NoError(t, err)
	assert.Equal(t, "w1", name)
	got, _ := kp.PublicKey()
	assert.Equal(t, pub, got)
	uj, err := jwt.ParseDecoratedJWT(creds)
	require.NoError(t, err)
	uc, err := jwt.DecodeUserClaims(uj)
	require.NoError(t, err)
	assert.Empty(t, uc.Permissions.Pub.Allow, "no permissions of its own")
	assert.Empty(t, uc.Permissions.Sub.Allow)
	assert.ElementsMatch(t, []string{"set:any", "set:gpu", "set:sandboxed", "set:gpu_2bsandboxed"}, []string(uc.Tags))
	assert.NotEqual(t, uc.IssuerAccount, uc.Issuer, "signed by a signing key, not the account's own")
}

// A worker counts only with a user JWT the account's worker signing key
// made, under its own name and key, not revoked (whatever the clocks: a
// revocation covers every JWT of the key, one issued by a clock a minute
// ahead too), not expired (a JWT that expires mid-job).
func TestWorkerSets(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "foreman")
	require.NoError(t, Init(dir))
	claims := func() *jwt.AccountClaims {
		data, err := os.ReadFile(filepath.Join(dir, accountJWT))
		require.NoError(t, err)
		ac, err := jwt.DecodeAccountClaims(strings.TrimSpace(string(data)))
		require.NoError(t, err)
		return ac
	}
	userOf := func(creds []byte) (string, *jwt.UserClaims) {
		uj, err := jwt.ParseDecoratedJWT(creds)
		require.NoError(t, err)
		uc, err := jwt.DecodeUserClaims(uj)
		require.NoError(t, err)
		return uj, uc
	}
	creds, pub, err := Creds(dir, User{Role: RoleWorker, Name: "w1", Labels: []string{"gpu"}, Confined: true})
	require.NoError(t, err)
	uj, uc := userOf(creds)
	sets, err := WorkerSets(claims(), uj, "w1", pub)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"any", "gpu", "sandboxed", "gpu_2bsandboxed"}, sets)

	_, err = WorkerSets(claims(), uj, "w2", pub)
	assert.ErrorContains(t, err, `its user JWT is user "w1"'s`)
	other, _ := nkeys.CreateUser()
	otherPub, _ := other.PublicKey()
	_, err = WorkerSets(claims(), uj, "w1", otherPub)
	assert.ErrorContains(t, err, "not the key it signs with")
	hostCreds, hostPub, err := Creds(dir, User{Role: RoleHost, Name: "w1", Builds: []string{"shop"}})
	require.NoError(t, err)
	hj, _ := userOf(hostCreds)
	_, err = WorkerSets(claims(), hj, "w1", hostPub)
	assert.ErrorContains(t, err, "not signed by the account's worker signing key")

	// Expired: the worker's key signs a copy that expired a second ago.
	signer, err := readSeed(keyFile(dir, RoleWorker))
	require.NoError(t, err)
	expired := *uc
	expired.Expires = time.Now().Add(-time.Second).Unix()
	ej, err := expired.Encode(signer)
	require.NoError(t, err)
	_, err = WorkerSets(claims(), ej, "w1", pub)
	assert.ErrorContains(t, err, "expired")

	// Revoked; and a JWT of the key stamped by a clock a minute ahead (or
	// a day) is revoked too (Encode stamps its own clock, so the
	// account's rule is asked directly).
	_, _, err = Revoke(dir, "w1")
	require.NoError(t, err)
	_, err = WorkerSets(claims(), uj, "w1", pub)
	assert.ErrorContains(t, err, "revoked")
	for _, ahead := range []time.Duration{time.Minute, 24 * time.Hour} {
		assert.True(t, claims().Revocations.IsRevoked(pub, time.Now().Add(ahead)), "a JWT issued %s ahead", ahead)
	}
}
