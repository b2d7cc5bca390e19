package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/transcript"
)

// foreman sim runs seeds and sums them up; a clean run exits 0.
func TestSimSummary(t *testing.T) {
	code, out, errOut := foreman(t, "sim", "--seeds", "3", "--from", "11", "--workers", "2", "-v")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "seeds 11 to 13: 3 runs")
	assert.Contains(t, out, "seed 12: ")
	assert.Contains(t, out, "faults injected:")
	assert.Contains(t, out, "invariant violations: 0")
}

// One seed with -v shows every step and writes its transcripts, which
// foreman replay reads.
func TestSimOneSeedWritesItsTranscript(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := foreman(t, "sim", "--seeds", "1", "--from", "7", "-v", "--out", dir)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "foreman starts (life 1)")
	assert.Contains(t, out, "seed 7: ")
	f, err := os.Open(filepath.Join(dir, "seed-7.txt"))
	require.NoError(t, err)
	defer f.Close()
	tr, err := transcript.Parse("seed-7.txt", f)
	require.NoError(t, err)
	assert.NotEmpty(t, tr.Lines)
	room, err := os.ReadFile(filepath.Join(dir, "seed-7.room.log"))
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(room), "TASKS"))
}

func TestSimRefusesNoSeeds(t *testing.T) {
	code, _, errOut := foreman(t, "sim", "--seeds", "0")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "--seeds")
}
