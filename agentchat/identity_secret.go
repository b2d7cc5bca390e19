package agentchat

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
)

// SecretForms lists the texts that would give away the private key of the
// identity file at path, for a log that must never show them: each line
// of the PEM the file holds (as written, which may come from another
// client), and the key as foreman writes it (PKCS#8 base64), its 32-byte
// seed and its 64-byte private key in hex and base64.
func SecretForms(path string) []string {
	var out []string
	if data, err := os.ReadFile(path); err == nil {
		var f identityFile
		if json.Unmarshal(data, &f) == nil {
			for _, pemText := range []string{f.Privkey, f.PrivateKey} {
				for _, line := range strings.Split(pemText, "\n") {
					line = strings.TrimSpace(line)
					if line != "" && !strings.HasPrefix(line, "-----") {
						out = append(out, line)
					}
				}
			}
		}
	}
	id, err := LoadIdentity(path)
	if err != nil {
		return out
	}
	if der, err := x509.MarshalPKCS8PrivateKey(id.priv); err == nil {
		out = append(out, base64.StdEncoding.EncodeToString(der))
	}
	seed := id.priv.Seed()
	for _, b := range [][]byte{seed, id.priv} {
		out = append(out, hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)),
			base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
			base64.URLEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b))
	}
	return out
}
