package agentchat

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIdentityRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys", "identity.json")
	id, created, err := LoadOrCreateIdentity(path, "foreman")
	require.NoError(t, err)
	assert.True(t, created)

	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	dir, err := os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), dir.Mode().Perm())

	var f map[string]string
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &f))
	assert.Equal(t, "foreman", f["name"])
	assert.Equal(t, id.PublicPEM(), f["pubkey"])
	assert.Contains(t, f["privkey"], "-----BEGIN PRIVATE KEY-----\n")
	assert.NotEmpty(t, f["created"])

	again, created, err := LoadOrCreateIdentity(path, "other")
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, id.AgentID(), again.AgentID())
	assert.Equal(t, "foreman", again.Name)
	assert.Equal(t, id.Created, again.Created)
}

func TestIdentityFromSeedRepeats(t *testing.T) {
	a := IdentityFromSeed("sim", [32]byte{1})
	b := IdentityFromSeed("sim", [32]byte{1})
	c := IdentityFromSeed("sim", [32]byte{2})
	assert.Equal(t, a.AgentID(), b.AgentID())
	assert.NotEqual(t, a.AgentID(), c.AgentID())
	assert.Equal(t, "sim", a.Name)
	sig, err := base64.StdEncoding.DecodeString(a.SignChallenge("n", "c", 1))
	require.NoError(t, err)
	assert.True(t, ed25519.Verify(a.PublicKey(), []byte(AuthMessage("n", "c", "1")), sig), "the key signs like any other")
}

func TestIdentityReadsOldFieldNames(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	require.NoError(t, err)
	privDER, err := x509.MarshalPKCS8PrivateKey(priv)
	require.NoError(t, err)
	pubPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}))
	// What the reference JS client writes.
	data, err := json.Marshal(map[string]any{
		"publicKey":  pubPEM,
		"privateKey": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER})),
		"agentId":    "ignored",
		"name":       "jsbot",
		"created":    "2025-03-01T10:20:30.123Z",
	})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "identity.json")
	require.NoError(t, os.WriteFile(path, data, 0o600))

	id, err := LoadIdentity(path)
	require.NoError(t, err)
	assert.Equal(t, "jsbot", id.Name)
	assert.Equal(t, pubPEM, id.PublicPEM())
	assert.Equal(t, 2025, id.Created.Year())
}

func TestIdentityRejectsMismatchedKeys(t *testing.T) {
	a, err := NewIdentity("a")
	require.NoError(t, err)
	b, err := NewIdentity("b")
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "identity.json")
	require.NoError(t, a.Save(path))
	var f map[string]string
	data, _ := os.ReadFile(path)
	require.NoError(t, json.Unmarshal(data, &f))
	f["pubkey"] = b.PublicPEM()
	data, _ = json.Marshal(f)
	require.NoError(t, os.WriteFile(path, data, 0o600))

	_, err = LoadIdentity(path)
	assert.ErrorContains(t, err, "pubkey does not belong to privkey")
}

func TestAgentIDAndSignature(t *testing.T) {
	id, err := NewIdentity("foreman")
	require.NoError(t, err)
	der, err := x509.MarshalPKIXPublicKey(id.PublicKey())
	require.NoError(t, err)
	want := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	assert.Equal(t, string(want), id.PublicPEM(), "PublicPEM must be Go's (and Node's) exact encoding")
	assert.Regexp(t, `^-----BEGIN PUBLIC KEY-----\n[A-Za-z0-9+/=]+\n-----END PUBLIC KEY-----\n$`, id.PublicPEM())

	sum := sha256.Sum256(want)
	assert.Equal(t, "@"+hex.EncodeToString(sum[:8]), id.AgentID())
	// Another line ending is another id.
	assert.NotEqual(t, id.AgentID(), AgentIDFor(id.PublicPEM()[:len(id.PublicPEM())-1]))

	sig := id.SignChallenge("00ff", "chal_x_1", 1700000000123)
	raw, err := base64.StdEncoding.DecodeString(sig)
	require.NoError(t, err)
	assert.True(t, ed25519.Verify(id.PublicKey(), []byte("AGENTCHAT_AUTH|00ff|chal_x_1|1700000000123"), raw))
}

func TestOpenToOthers(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("permission bits say nothing on Windows")
	}
	path := filepath.Join(t.TempDir(), "identity.json")
	id, err := NewIdentity("olga")
	require.NoError(t, err)
	require.NoError(t, id.Save(path))
	_, open := OpenToOthers(path)
	assert.False(t, open, "Save writes 0600")

	require.NoError(t, os.Chmod(path, 0o640))
	perm, open := OpenToOthers(path)
	assert.True(t, open)
	assert.Equal(t, os.FileMode(0o640), perm)

	_, open = OpenToOthers(filepath.Join(t.TempDir(), "missing.json"))
	assert.False(t, open)
}

func TestSecretFormsHoldTheKeyAsWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "id.json")
	id, err := NewIdentity("host")
	require.NoError(t, err)
	require.NoError(t, id.Save(path))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	forms := SecretForms(path)
	var f identityFile
	require.NoError(t, json.Unmarshal(data, &f))
	body := strings.Split(strings.TrimSpace(f.Privkey), "\n")[1]
	assert.Contains(t, forms, body, "the PEM's base64 line, as the file holds it")
	assert.Contains(t, forms, hex.EncodeToString(id.priv.Seed()))
	for _, s := range forms {
		assert.NotContains(t, id.PublicPEM(), s, "nothing public is taken for a secret")
	}
	assert.Empty(t, SecretForms(filepath.Join(t.TempDir(), "none.json")))
}
