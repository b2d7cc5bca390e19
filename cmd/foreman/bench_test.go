package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBenchRefusesServersElsewhere(t *testing.T) {
	code, _, errOut := foreman(t, "bench", "--url", "ws://192.0.2.1:6667", "-q")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "only runs against 127.0.0.1 or localhost")
}

func TestBenchRefusesBadAgents(t *testing.T) {
	code, _, errOut := foreman(t, "bench", "--agents", "-5", "-q")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "--agents must be at least 1")
}
