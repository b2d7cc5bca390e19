package host

import (
	"fmt"
	"path"
	"strings"

	"github.com/agentforeman/foreman/protocol"
)

// hostFault judges a check that never started (Outcome.NotRun): whether
// the fault is the host's own, not the builder's (contract section 6,
// host-fault), and if so what happened and what fixes it. The host's own
// are the sandbox failing, a program outside the worktree (the host's
// file: missing, not executable, or out of the sandbox's sight), and a
// program of the worktree that the checked tree holds just as the target
// does (its content and mode): the builder's branch did not break it, and
// cannot be asked to mend what the checks stand on. A program of the
// worktree the branch changed (its first line naming an interpreter
// nobody has, its executable bit taken, itself deleted) is a failure of
// the builder's, as any other: a branch cannot make its own failure the
// host's, and so be charged nothing.
func (h *Core) hostFault(c *comp, o Outcome) (string, bool) {
	if o.Result != Failed || o.NotRun == "" {
		return "", false
	}
	switch {
	case o.NotRun == SandboxFailed:
		return fmt.Sprintf("the sandbox failed (%s): fix the host (foreman host's log says more)", o.Line), true
	case !o.InTree:
		fix := "install it or name it by its path in host.checks, and keep its directory in host.sandbox_paths.ro"
		if o.NotRun == NotExecutable {
			fix = "chmod +x " + o.Program + ", or add its directory to host.sandbox_paths.ro"
		}
		return fmt.Sprintf("check program %s: %s in the checks' sandbox: %s", o.Program, o.NotRun, fix), true
	case o.Changed:
		return "", false // the branch changed it
	case o.OnTarget == "":
		return fmt.Sprintf("check program %s is not in %s's tree: %s", o.Program, h.cfg.Target, landAFix(o.Program, false)), true
	case o.NotRun == NotExecutable && o.OnTarget != gitrepoExecutable:
		return fmt.Sprintf("check program %s is not executable on %s: %s", o.Program, h.cfg.Target, landAFix(o.Program, true)), true
	case o.NotRun == NotFound && o.Interpreter != "":
		return fmt.Sprintf("check program %s runs with %s (its #! line), not found in the checks' sandbox: install it (in sight: host.sandbox_paths.ro), or land a first line that names one through the host", o.Program, o.Interpreter), true
	}
	return "", false
}

// gitrepoExecutable is an executable file's mode in a git tree
// (gitrepo.ModeExecutable; the core imports no executor).
const gitrepoExecutable = "100755"

// landAFix says how the operator lands a fix to the checks: through the
// host, as any change, checked by the checks it brings.
func landAFix(program string, chmod bool) string {
	how := "commit it"
	if chmod {
		how = "make it executable (git update-index --chmod=+x " + path.Clean(program) + ")"
	}
	return how + " on a branch and land it through the host: ADD hotfix, ASSIGN hotfix @you, READY hotfix <branch>"
}

// hostFaultLine is the CI role's line for a check the host could not run
// for its own reason: CI c FAIL host-fault: <what and what fixes it>.
func hostFaultLine(c *comp, why string) string {
	prefix := "CI " + c.name + " FAIL " + string(protocol.HostFault) + ": "
	return prefix + strings.TrimSpace(protocol.CleanText(why, protocol.MaxText-len(prefix)))
}
