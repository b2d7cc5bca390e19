package agentchat

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"
)

// Identity is an Ed25519 key pair in AgentChat's identity.json format. The
// key decides the agent id the server assigns, so losing the file means a new
// id (and, on a stock server, an hour of lurking before the new key may send).
type Identity struct {
	Name    string
	Created time.Time

	pub  ed25519.PublicKey
	priv ed25519.PrivateKey
}

// identityFile is what is written. The reference JS client writes
// publicKey/privateKey instead; both spellings are read.
type identityFile struct {
	Name    string `json:"name,omitempty"`
	Pubkey  string `json:"pubkey,omitempty"`
	Privkey string `json:"privkey,omitempty"`
	Created string `json:"created,omitempty"`

	PublicKey  string `json:"publicKey,omitempty"`
	PrivateKey string `json:"privateKey,omitempty"`
}

// NewIdentity generates a fresh key pair.
func NewIdentity(name string) (*Identity, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating an Ed25519 key: %w", err)
	}
	return &Identity{Name: name, Created: time.Now().UTC().Truncate(time.Second), pub: pub, priv: priv}, nil
}

// IdentityFromSeed derives a key pair from a 32-byte seed: the same seed
// always gives the same agent id. It is for simulations that must repeat
// exactly; a real agent's key comes from NewIdentity.
func IdentityFromSeed(name string, seed [ed25519.SeedSize]byte) *Identity {
	priv := ed25519.NewKeyFromSeed(seed[:])
	return &Identity{Name: name, Created: time.Now().UTC().Truncate(time.Second),
		pub: priv.Public().(ed25519.PublicKey), priv: priv}
}

// LoadIdentity reads an identity file written by foreman or by AgentChat's
// own clients.
func LoadIdentity(path string) (*Identity, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f identityFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: not an identity file (JSON): %v", path, err)
	}
	privPEM := firstNonEmpty(f.Privkey, f.PrivateKey)
	if privPEM == "" {
		return nil, fmt.Errorf("%s: no private key (privkey): an exported identity cannot sign in", path)
	}
	priv, err := parsePrivatePEM(privPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: privkey: %v", path, err)
	}
	id := &Identity{Name: f.Name, priv: priv, pub: priv.Public().(ed25519.PublicKey)}
	if pubPEM := firstNonEmpty(f.Pubkey, f.PublicKey); pubPEM != "" {
		pub, err := ParsePublicPEM(pubPEM)
		if err != nil {
			return nil, fmt.Errorf("%s: pubkey: %v", path, err)
		}
		if !pub.Equal(id.pub) {
			return nil, fmt.Errorf("%s: pubkey does not belong to privkey", path)
		}
	}
	if f.Created != "" {
		if t, err := time.Parse(time.RFC3339, f.Created); err == nil {
			id.Created = t
		}
	}
	return id, nil
}

// LoadOrCreateIdentity loads path, or creates it with a new key pair when it
// does not exist. created says which happened.
func LoadOrCreateIdentity(path, name string) (id *Identity, created bool, err error) {
	id, err = LoadIdentity(path)
	if err == nil {
		return id, false, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, false, err
	}
	if id, err = NewIdentity(name); err != nil {
		return nil, false, err
	}
	if err := id.Save(path); err != nil {
		return nil, false, err
	}
	return id, true, nil
}

// Save writes the identity with mode 0600, creating its directory with 0700.
// The file is replaced atomically so a crash never leaves half a key.
func (id *Identity) Save(path string) error {
	privDER, err := x509.MarshalPKCS8PrivateKey(id.priv)
	if err != nil {
		return err
	}
	f := identityFile{
		Name:    id.Name,
		Pubkey:  id.PublicPEM(),
		Privkey: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER})),
		Created: id.Created.UTC().Format(time.RFC3339),
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".identity-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// PublicPEM is the SPKI PEM text sent in IDENTIFY, exactly as Node's
// KeyObject.export writes it, so every client derives the same agent id.
func (id *Identity) PublicPEM() string {
	der, err := x509.MarshalPKIXPublicKey(id.pub)
	if err != nil {
		panic(err) // an ed25519.PublicKey always marshals
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// AgentID is the sender id the server assigns to this key.
func (id *Identity) AgentID() string { return AgentIDFor(id.PublicPEM()) }

// PublicKey is the raw public key.
func (id *Identity) PublicKey() ed25519.PublicKey { return id.pub }

// Sign signs msg with the private key (Ed25519: the same message always
// gives the same signature).
func (id *Identity) Sign(msg []byte) []byte { return ed25519.Sign(id.priv, msg) }

// SignChallenge answers a CHALLENGE: the signature over AuthMessage, in
// standard base64 with padding.
func (id *Identity) SignChallenge(nonce, challengeID string, timestamp int64) string {
	msg := AuthMessage(nonce, challengeID, strconv.FormatInt(timestamp, 10))
	return base64.StdEncoding.EncodeToString(ed25519.Sign(id.priv, []byte(msg)))
}

// AgentIDFor is "@" and the first 16 hex digits of SHA-256 over the PEM text
// exactly as sent: another line ending gives another id.
func AgentIDFor(publicPEM string) string {
	sum := sha256.Sum256([]byte(publicPEM))
	return "@" + hex.EncodeToString(sum[:])[:16]
}

// AuthMessage is the string a CHALLENGE answer signs. timestamp is the
// decimal text of the integer sent in VERIFY_IDENTITY.
func AuthMessage(nonce, challengeID, timestamp string) string {
	return "AGENTCHAT_AUTH|" + nonce + "|" + challengeID + "|" + timestamp
}

// ParsePublicPEM reads an SPKI PEM Ed25519 public key.
func ParsePublicPEM(text string) (ed25519.PublicKey, error) {
	block, _ := pem.Decode([]byte(text))
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, errors.New("not a PEM PUBLIC KEY block")
	}
	key, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	pub, ok := key.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("a %T, not an Ed25519 key", key)
	}
	return pub, nil
}

func parsePrivatePEM(text string) (ed25519.PrivateKey, error) {
	block, _ := pem.Decode([]byte(text))
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, errors.New("not a PEM PRIVATE KEY block (PKCS#8)")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	priv, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("a %T, not an Ed25519 key", key)
	}
	return priv, nil
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// OpenToOthers reports whether users other than the owner may read or
// write the identity file at path (any group or other permission bit), and
// its permissions: anyone who can read the file can speak as the identity.
// It is false when the file cannot be examined, and on Windows, whose
// access rules the permission bits do not show.
func OpenToOthers(path string) (os.FileMode, bool) {
	if runtime.GOOS == "windows" {
		return 0, false
	}
	info, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	perm := info.Mode().Perm()
	return perm, perm&0o077 != 0
}
