package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The demo package's own test checks the story line by line; this one runs
// the command, with CI gating so the CI bot plays too.
func TestDemoCommandRunsTheBuildWithCI(t *testing.T) {
	code, out, errOut := foreman(t, "demo", "--minute", "50ms", "--ci", "--no-color")
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "CI gating on")
	assert.Contains(t, out, "ci-bot   ci          CI db PASS")
	assert.Contains(t, out, "REVIEW db @ada ada/db")
	assert.Contains(t, out, "COMPLETE bookshop")
	assert.Contains(t, out, "bookshop complete: 7 components merged")
	assert.Contains(t, out, "timeouts 1, retries 1, fixes 2, escalations 1, merges 7")
	assert.NotContains(t, out, "\x1b[")
}
