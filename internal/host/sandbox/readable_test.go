//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The review's case on this machine: a secret foreman will make in
// /etc/ssl/certs, denied before it exists, is not granted with its
// directory.
func TestReadableLeavesOutADeniedFileNotMadeYet(t *testing.T) {
	certs := "/etc/ssl/certs"
	if fi, err := os.Stat(certs); err != nil || !fi.IsDir() || fi.Mode().Perm()&0o005 != 0o005 {
		t.Skipf("%s: not a directory everyone may read here", certs)
	}
	secret := filepath.Join(certs, "foreman-test-otlp.secret")
	_, err := os.Lstat(secret)
	assert.True(t, os.IsNotExist(err), "%s exists", secret)
	dirs, _ := Readable([]Denied{{Key: "telemetry secret", Path: secret}})
	for _, d := range dirs {
		assert.False(t, within(secret, d), "%s is granted, and with it the secret made later", d)
	}
}
