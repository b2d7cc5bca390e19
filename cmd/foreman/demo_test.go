package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// make demo-real: foreman up on a temporary git repository, scripted
// builders and an auditor over the embedded room at its stock pace, until
// COMPLETE with main holding every component. How long it takes is said,
// not asserted.
func TestDemoUpCompletesOnRealGit(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole build at the stock room's pace: about 40s")
	}
	code, out, errOut := foreman(t, "demo", "--up", "--quiet")
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	assert.Regexp(t, `(?m)^bookshop complete in \d+\.\ds from foreman up to COMPLETE: main holds all 7 components; foreman up stopped cleanly$`, out)
	assert.Contains(t, out, " db: the work\n", "git log --graph of main")
	t.Log("\n" + out)
}
