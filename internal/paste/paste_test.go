package paste

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The program named is this one, absolute: a client's PATH often lacks
// ~/go/bin.
func TestProgramAndShell(t *testing.T) {
	assert.Equal(t, "foreman", Program(), "under go test, a temporary build")
	assert.Equal(t, `/a/foreman agent --identity '/b c/k.json' 'it'\''s'`, Shell([]string{"/a/foreman", "agent", "--identity", "/b c/k.json", "it's"}))
}
