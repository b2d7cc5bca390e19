package gitjob

import (
	"context"
	"time"

	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/host/checks"
	"github.com/agentforeman/foreman/internal/host/receipt"
	"github.com/agentforeman/foreman/internal/host/sandbox"
)

// Checker runs the checks on a commit the host made or resolved: the one
// step of a job that needs nothing of host.repo but the commit itself, and
// so the seam where it may run elsewhere. The Runner runs them in its own
// slots (Options.Checker nil); package remote sends them to workers.
type Checker interface {
	Check(ctx context.Context, req CheckRequest) (Checked, error)
}

// CheckRequest is a commit to check, for a job.
type CheckRequest struct {
	Job    host.Job // names the run (and its logs), the component and the ref
	Commit string   // what to check: exactly this commit
	Base   string   // the target it was merged with (FOREMAN_BASE)
}

// Checked is how the checks of one commit ended, after any retries.
type Checked struct {
	checks.Result
	Flaky []string // checks that failed, then passed when run again on the same tree
	Logs  []string // each try's log file, in order: the last is the verdict's
	// RanOn says where they ran: "host", or "worker <id>" for each worker
	// that ran some (receipts say it).
	RanOn []string
	// Sandbox names the confinement they ran in (sandbox.Digest; "off").
	Sandbox string
	// Commands is each check command of the host's, in order, and how it
	// ended on the last try: passed, failed, or not run. What passed is
	// the core's to decide from it, never Passed alone.
	Commands []receipt.Command
}

// CheckNames are check commands as the core and the receipts name them
// (checks.Quote).
func CheckNames(cmds [][]string) []string {
	out := make([]string, len(cmds))
	for i, argv := range cmds {
		out[i] = checks.Quote(argv)
	}
	return out
}

// Results is how each of cmds (run in order until one fails) ended: all
// passed, or those before the one named failed passed, it failed, the
// rest did not run.
func Results(cmds [][]string, passed bool, failed string) []receipt.Command {
	out := make([]receipt.Command, 0, len(cmds))
	state := "passed"
	for _, argv := range cmds {
		name := checks.Quote(argv)
		result := state
		if !passed && state == "passed" && name == failed {
			result, state = "failed", "not run"
		}
		out = append(out, receipt.Command{Command: name, Result: result})
	}
	if !passed && state == "passed" && len(out) > 0 {
		// The failure names no command of these (it could not run one):
		// the last did not pass.
		out[len(out)-1].Result = "failed"
	}
	return out
}

// CheckSpec is everything one run of the checks needs besides a slot: what
// the host's configuration says locally, what a job says on a worker.
type CheckSpec struct {
	Job      host.Job
	Commit   string
	Base     string
	Target   string     // FOREMAN_TARGET
	Checks   [][]string // each a program and its arguments
	Env      []string   // host.env: NAME or NAME=value
	Timeout  time.Duration
	LogLimit int64
	Retries  int              // a failed check is run again this many times on the same tree
	Sandbox  *sandbox.Sandbox // nil: unconfined
	Secrets  []checks.Secret
	// LogName names each try's log (default LogName).
	LogName func(j host.Job, try int) string
}

// Check runs the checks of req in one of the runner's slots: the local
// Checker, configured by Options.
func (r *Runner) Check(ctx context.Context, req CheckRequest) (Checked, error) {
	return r.RunChecks(ctx, CheckSpec{Job: req.Job, Commit: req.Commit, Base: req.Base, Target: r.o.Target,
		Checks: r.o.Checks, Env: r.o.Env, Timeout: r.o.Timeout, LogLimit: r.o.LogLimit, Retries: req.Job.Retries(),
		Sandbox: r.o.Sandbox, Secrets: r.o.Secrets})
}

// RunChecks runs the checks on s.Commit in a slot and, when they fail,
// again on the same tree up to s.Retries times before the failure counts:
// a check that then passes is flaky, and says so (Checked.Flaky); the tree
// passed. A time limit, a sandbox limit or a program that cannot run is
// not retried: the next try would cost as much, or end the same.
func (r *Runner) RunChecks(ctx context.Context, s CheckSpec) (Checked, error) {
	if s.LogName == nil {
		s.LogName = LogName
	}
	out := Checked{RanOn: []string{"host"}, Sandbox: s.Sandbox.Digest()}
	res, err := r.runChecks(ctx, s, &out, 0)
	for try := 1; err == nil && !res.Passed && !res.TimedOut && !res.Stopped && try <= s.Retries && ctx.Err() == nil; try++ {
		again, err2 := r.runChecks(ctx, s, &out, try)
		if err2 != nil {
			out.Result = again
			return out, err2
		}
		if again.Passed {
			out.Flaky = append(out.Flaky, shortCommand(res.Command))
			res = again
			break
		}
		res = again
	}
	out.Result = res
	out.Commands = Results(s.Checks, res.Passed, res.Command)
	return out, err
}

// checker is who runs the checks: Options.Checker, else the runner.
func (r *Runner) checker() Checker {
	if r.o.Checker != nil {
		return r.o.Checker
	}
	return r
}
