package logging

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJSONWhenNotATerminal(t *testing.T) {
	var buf bytes.Buffer
	log, err := New(&buf, "info", "auto")
	require.NoError(t, err)
	log.Info().Str("component", "api").Msg("assigned")
	log.Debug().Msg("hidden below info")
	var line map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &line))
	assert.Equal(t, "assigned", line["message"])
	assert.Equal(t, "api", line["component"])
}

func TestConsoleFormat(t *testing.T) {
	var buf bytes.Buffer
	log, err := New(&buf, "debug", "console")
	require.NoError(t, err)
	log.Debug().Msg("joined the room")
	assert.Contains(t, buf.String(), "joined the room")
	assert.NotContains(t, buf.String(), "{")
}

func TestBadLevel(t *testing.T) {
	_, err := New(&bytes.Buffer{}, "loud", "json")
	assert.Error(t, err)
}
