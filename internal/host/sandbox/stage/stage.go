// Package stage is the first process of a sandboxed check: foreman host
// starts /proc/self/exe with argv[0] set to Marker, in new namespaces, and
// this package's init, before main (or a test binary's TestMain) runs,
// confines the process, starts the check's program from the confined
// thread, and stays as PID 1 of the namespace: it reaps the processes
// that lose their parent (as tini does; a test runner as PID 1 would let
// them pile up as zombies), and when the program exits it kills what is
// left and exits with the program's status.
//
// Why a re-exec: Go runs no code of the caller's between fork and exec, and
// the confinement (Landlock, dropping capabilities, no_new_privs, the mounts
// of a private /proc) must happen in the check's process, not the host's.
// The host cannot confine itself: it must go on writing its ledger and
// logs, and running git.
//
// The package imports little, so that init order puts it before the
// heavier packages of the binary: what runs before the check starts is
// paid by every check (docs/PERFORMANCE.md).
//
// The host says what to do on file descriptor 3 (a JSON Spec, not in argv
// or the environment, where the check could read it back) and passes the
// Landlock ruleset it built on 5; the stage reports a failure on 4, which
// it marks close-on-exec and closes once the program runs: the host reads
// end of file when the program started, or why it did not.
package stage

// Marker is argv[0] of a process that is a stage.
const Marker = "foreman-sandbox-stage"

// The descriptors the host passes (os/exec's ExtraFiles start at 3).
const (
	SpecFD    = 3
	ReportFD  = 4
	RulesetFD = 5
)

// ExitFailed is the stage's exit status when it could not confine or
// start the check (the reason is on ReportFD).
const ExitFailed = 126

// Spec is what the stage does, written by the host as JSON on SpecFD.
type Spec struct {
	Path string   // the program, found on the check's PATH by the host
	Args []string // its argv, argv[0] included
	Env  []string // its whole environment
	Dir  string   // where it runs

	// LoopbackUp brings up lo in the private network namespace: a check
	// may serve and reach 127.0.0.1 of its own.
	LoopbackUp bool
	// HideRun mounts an empty tmpfs over /run, where the machine's
	// services keep their unix sockets.
	HideRun bool
	// Tmp, if set, is bind-mounted over /tmp: the run's private directory.
	Tmp string
	// ProcAccess are the Landlock rights granted on the fresh /proc (it is
	// mounted by the stage, so the host cannot name it in its ruleset).
	ProcAccess uint64
	// FileSize is RLIMIT_FSIZE in bytes; 0 leaves it.
	FileSize uint64
	// Tasks is RLIMIT_NPROC, set only when the check has a user namespace
	// of its own (where the kernel counts its tasks alone); 0 leaves it.
	Tasks uint64
	// Probe makes the stage check what it enforces and exit instead of
	// running a program: it writes "ok" or what is missing to ReportFD.
	Probe bool
}
