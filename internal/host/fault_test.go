package host

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/protocol"
)

// A check that never started is judged by where its program is and how
// the target holds it: the host's own fault (CI c FAIL host-fault, which
// foreman holds c for, charging nothing) or the builder's (an ordinary CI
// FAIL, a FIX). The executor only reports the facts.
func TestACheckThatNeverStartedIsJudgedByTheCore(t *testing.T) {
	commit := strings.Repeat("ab", 20)
	for _, tc := range []struct {
		name string
		o    Outcome
		want string // the line said, after "CI api FAIL "
	}{
		{"in the tree, not executable on the target either",
			Outcome{NotRun: NotExecutable, Program: "./check.sh", InTree: true, OnTarget: "100644"},
			"host-fault: check program ./check.sh is not executable on main: make it executable (git update-index --chmod=+x check.sh) on a branch and land it through the host: ADD hotfix, ASSIGN hotfix @you, READY hotfix <branch>"},
		{"in the tree, missing from the target",
			Outcome{NotRun: NotFound, Program: "scripts/check", InTree: true},
			"host-fault: check program scripts/check is not in main's tree: commit it on a branch and land it through the host: ADD hotfix, ASSIGN hotfix @you, READY hotfix <branch>"},
		{"the host's program, not executable",
			Outcome{NotRun: NotExecutable, Program: "/opt/ci/check"},
			"host-fault: check program /opt/ci/check: not executable in the checks' sandbox: chmod +x /opt/ci/check, or add its directory to host.sandbox_paths.ro"},
		{"the host's program, missing",
			Outcome{NotRun: NotFound, Program: "golangci-lint"},
			"host-fault: check program golangci-lint: not found in the checks' sandbox: install it or name it by its path in host.checks, and keep its directory in host.sandbox_paths.ro"},
		{"the sandbox",
			Outcome{NotRun: SandboxFailed, Program: "./check.sh", InTree: true, OnTarget: "100755", Line: "check.sh: did not run: sandbox: landlock: not supported"},
			"host-fault: the sandbox failed (check.sh: did not run: sandbox: landlock: not supported): fix the host (foreman host's log says more)"},
		{"made not executable by the branch",
			Outcome{NotRun: NotExecutable, Program: "./check.sh", InTree: true, OnTarget: "100755", Line: "check.sh: did not run: exec ./check.sh: permission denied"},
			"abababababab check.sh: did not run: exec ./check.sh: permission denied"},
		{"deleted by the branch",
			Outcome{NotRun: NotFound, Program: "./check.sh", InTree: true, OnTarget: "100755", Line: "check.sh: did not run: no such file"},
			"abababababab check.sh: did not run: no such file"},
		{"its first line changed by the branch to an interpreter nobody has",
			Outcome{NotRun: NotFound, Program: "./check.sh", Interpreter: "/nonexistent/sh", InTree: true, OnTarget: "100755", Changed: true, Line: "check.sh: did not run: no such file"},
			"abababababab check.sh: did not run: no such file"},
		{"the target's script names an interpreter the host lacks",
			Outcome{NotRun: NotFound, Program: "./check.sh", Interpreter: "/usr/bin/python3", InTree: true, OnTarget: "100755", Line: "check.sh: did not run: no such file"},
			"host-fault: check program ./check.sh runs with /usr/bin/python3 (its #! line), not found in the checks' sandbox: install it (in sight: host.sandbox_paths.ro), or land a first line that names one through the host"},
		{"not executable on the target, and changed by the branch",
			Outcome{NotRun: NotExecutable, Program: "./check.sh", InTree: true, OnTarget: "100644", Changed: true, Line: "check.sh: did not run: exec ./check.sh: permission denied"},
			"abababababab check.sh: did not run: exec ./check.sh: permission denied"},
		{"ran and failed",
			Outcome{Line: "make test: FAIL"},
			"abababababab make test: FAIL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newHarness(t, nil)
			s.built("api", "@b1")
			j := s.started(s.hear("@b1", "READY api b1/api"))
			o := tc.o
			o.Result, o.Commit, o.Lasting = Failed, commit, o.NotRun != ""
			a := s.finish(j.Run, o)
			require.Len(t, a.Say, 1)
			assert.Equal(t, "CI api FAIL "+tc.want, a.Say[0])
			assert.LessOrEqual(t, len(a.Say[0]), 300)
			// foreman's answer either way: the host checks again when
			// the builder (or, after RESOLVE, the same one) says READY.
			if strings.HasPrefix(tc.want, "host-fault") {
				s.foreman("ESCALATE api host-fault ...; fix it as said, then RESOLVE api")
				s.foreman("ACK api @b1 resolved by @op")
			} else {
				s.foreman("FIX api @b1 1/5 CI failed: ...")
			}
			assert.Equal(t, Check, s.started(s.hear("@b1", "READY api b1/api")).Kind)
		})
	}
}

// The host-fault line fits a room line whatever the cause says: the
// cause is cut to what is left after its prefix, never the line past
// MaxText.
func TestAHostFaultLineFitsALine(t *testing.T) {
	c := &comp{name: "db"}
	line := hostFaultLine(c, strings.Repeat("why ", protocol.MaxText))
	assert.True(t, strings.HasPrefix(line, "CI db FAIL host-fault: why why"), line[:40])
	assert.LessOrEqual(t, len(line), protocol.MaxText)
	assert.Greater(t, len(line), protocol.MaxText-8, "cut at the bound, not short of it")
	assert.Equal(t, "CI db FAIL host-fault: short", hostFaultLine(c, "  short  "))
}
