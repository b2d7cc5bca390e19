package workq

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/agentforeman/foreman/internal/natsauth"
)

// Trust is the workers a host counts results from, each by its id and
// public key (an nkey, U...): the file host.workers names, in the format
// natsauth.ParseTrust reads and natsauth.AddTrusted writes (`foreman nats
// creds --role worker --trust FILE` adds the line for a worker it makes). The file is read again
// when it changes: a worker taken out of it is refused from its next
// result on, with no restart.
type Trust struct {
	path string

	mu    sync.Mutex
	keys  map[string]string
	stamp time.Time
	size  int64
}

// OpenTrust reads the trust file at path: an error if it cannot be read
// or holds a line that is not a worker and its key.
func OpenTrust(path string) (*Trust, error) {
	t := &Trust{path: path}
	if err := t.reload(); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Trust) reload() error {
	st, err := os.Stat(t.path)
	if err != nil {
		return err
	}
	t.mu.Lock()
	same := st.ModTime().Equal(t.stamp) && st.Size() == t.size && t.keys != nil
	t.mu.Unlock()
	if same {
		return nil
	}
	data, err := os.ReadFile(t.path)
	if err != nil {
		return err
	}
	keys, err := natsauth.ParseTrust(data)
	if err != nil {
		return fmt.Errorf("%s: %w", t.path, err)
	}
	t.mu.Lock()
	t.keys, t.stamp, t.size = keys, st.ModTime(), st.Size()
	t.mu.Unlock()
	return nil
}

// Key is the key worker is trusted with, read from the file as it is
// now; "" when it is not trusted. A file that became unreadable or
// malformed keeps the last good reading.
func (t *Trust) Key(worker string) string {
	_ = t.reload()
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.keys[worker]
}

// Sign signs data with kp: its public key and the signature, as Verify
// reads them; nothing without a key (a worker that signs in without an
// nkey), or one that cannot sign.
func Sign(kp nkeys.KeyPair, data []byte) (key, sig string) {
	if kp == nil {
		return "", ""
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return "", ""
	}
	raw, err := kp.Sign(data)
	if err != nil {
		return "", ""
	}
	return pub, base64.RawURLEncoding.EncodeToString(raw)
}

// Verify checks that sig is key's signature of data.
func Verify(key string, data []byte, sig string) error {
	if key == "" || sig == "" {
		return errors.New("it is not signed")
	}
	pub, err := nkeys.FromPublicKey(key)
	if err != nil {
		return fmt.Errorf("its key %q is not an nkey", key)
	}
	raw, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return errors.New("its signature is not base64")
	}
	if err := pub.Verify(data, raw); err != nil {
		return errors.New("its signature does not verify")
	}
	return nil
}
