package live

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A second host on a repository another host holds is refused in one line
// naming host.repo and the holder, before it prunes or opens anything (here
// with a ledger of its own, as a second config would have); once the first
// has stopped, a host may start there again.
func TestOneHostPerRepository(t *testing.T) {
	w := newWorld(t, worldOptions{})
	first, err := Prepare(bg, w.config(), zerolog.Nop())
	require.NoError(t, err)

	c := w.config()
	c.Host.Ledger = filepath.Join(w.dir, "other", "ledger.jsonl")
	c.Host.Work = filepath.Join(w.dir, "other", "work")
	_, err = Prepare(bg, c, zerolog.Nop())
	require.Error(t, err)
	assert.Equal(t, fmt.Sprintf("host.repo: %s is in use by another foreman host (process %d holds %s); stop it, or point host.repo at another repository",
		w.repo.Dir(), os.Getpid(), filepath.Join(w.repo.GitDir(), lockFile)), err.Error())
	assert.NoFileExists(t, c.Host.Ledger, "refused before its ledger was made")

	require.NoError(t, first.Close())
	again, err := Prepare(bg, c, zerolog.Nop())
	require.NoError(t, err)
	require.NoError(t, again.Close())
}
