package natsauth

import (
	"path/filepath"
	"testing"

	"github.com/nats-io/jwt/v2"
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
