package up

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServeListensWhereTheConfigPoints(t *testing.T) {
	for url, want := range map[string]string{"ws://127.0.0.1:7001": "127.0.0.1:7001", "ws://localhost": "localhost:80"} {
		got, err := ListenAddress(url)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, err := ListenAddress("wss://chat.example:443")
	assert.ErrorContains(t, err, "give --listen")
}
