package natsauth

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nkeys"
)

// The file a host trusts workers by (host.workers): a line per worker,
// "<id> <public key>" (its NATS user's nkey, U...), # for comments.

// ParseTrust reads a trust file's text: each worker's key, by its id.
func ParseTrust(data []byte) (map[string]string, error) {
	keys := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d: %q is not a worker's id and its key", n, strings.TrimSpace(line))
		}
		if !nkeys.IsValidPublicUserKey(f[1]) {
			return nil, fmt.Errorf("line %d: %q is not a user's public nkey (U...)", n, f[1])
		}
		keys[f[0]] = f[1]
	}
	return keys, sc.Err()
}

// AddTrusted adds worker id with its public key to the trust file at path,
// making the file if it is not there.
func AddTrusted(path, id, pub string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%s %s\n", id, pub)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
