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
	// UsernsFD, when Spec.Idmap is set, is a user namespace whose
	// mapping the Idmap mounts show their files through.
	UsernsFD = 6
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

	// Root, if set, is an empty directory of the host's where the stage
	// builds the check's whole filesystem: a tmpfs holding only Mounts and
	// Files, a fresh /proc, a minimal /dev (with a private /dev/shm of Shm
	// bytes) and /tmp, made the root (pivot_root). What is not mounted
	// does not exist for the check: no socket, key or file outside can be
	// named. "" keeps the host's filesystem, filtered by Landlock alone
	// (only the tests that prove the new root's defences ask for that).
	Root   string
	Mounts []Mount
	Files  []File
	Shm    int64
	// Grants are Landlock rights on paths of the new root that the host
	// cannot name in its ruleset (the stage's own tmpfs: /dev/shm, git's
	// directory of the host's making), added before Landlock is enforced.
	Grants []Grant
	// KeepFDs leaves the descriptors the stage inherited (but 0, 1 and 2)
	// open across the program's exec: only the test that proves closing
	// them asks for it.
	KeepFDs bool
	// Uid and Gid, when not 0, are who the program runs as: the stage
	// builds the filesystem as root, then becomes them (a host running as
	// root runs its checks as nobody, who owns none of root's files).
	Uid, Gid int
	// Userns says the host passed a user namespace on UsernsFD, for the
	// Idmap mounts.
	Userns bool
	// RefuseSetID has seccomp refuse every call that would set a setuid
	// or setgid bit (see setid_linux.go).
	RefuseSetID bool
	// SetIDOK leaves the binds the check may write without nosuid: only
	// the test that proves it asks for that.
	SetIDOK bool
	// Volumes are block devices holding filesystems of the host's, each
	// of a bounded size, for what the check writes: the stage mounts each
	// where only it sees it, and Mounts name paths in them (Mount.Volume).
	Volumes []string
	// Forward passes the signals a supervisor stops or nudges a program
	// with (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2) on to the
	// program: the stage, PID 1 of its namespace, would otherwise end it
	// at once (an agent foreman up starts is asked to stop first).
	Forward bool
	// SharedPID says the stage has no PID namespace of its own: at the
	// program's end it must not kill "every process it may", which would
	// be the machine's. Only the tests that prove the PID namespace's
	// defence ask for that.
	SharedPID bool
	// NoLandlock enforces no Landlock domain (the ruleset on RulesetFD is
	// not used): only the tests that prove Landlock's defence ask for it.
	NoLandlock bool
}

// Mount is one path of the check's filesystem: Source of the host's, shown
// at Target (the same path when ""), read-only unless Write. A Link is a
// symbolic link instead (a system directory that is one on the host, as
// /bin -> usr/bin).
type Mount struct {
	Source string `json:",omitempty"`
	Target string `json:",omitempty"`
	Write  bool   `json:",omitempty"`
	File   bool   `json:",omitempty"`
	Link   string `json:",omitempty"`
	// Idmap shows Source's files as owned through the user namespace on
	// UsernsFD (an idmapped mount): root's as the check's user, so that a
	// check running as nobody writes its worktree. Nothing on disk changes
	// hands.
	Idmap bool `json:",omitempty"`
	// Volume, when not 0, says the mount's writes go to Spec.Volumes
	// [Volume-1]: with Upper, it is an overlay of Source (the host's,
	// never written: idmapped when Idmap) whose upper directory is Upper
	// in the volume (its work directory Upper+".work" beside it); without,
	// a bind of Source, a path in the volume.
	Volume int    `json:",omitempty"`
	Upper  string `json:",omitempty"`
}

// Path is where the mount is in the check's filesystem.
func (m Mount) Path() string {
	if m.Target != "" {
		return m.Target
	}
	return m.Source
}

// File is a small file of the host's making, read-only, at Path.
type File struct {
	Path    string
	Content string
}

// Grant gives Landlock rights (Access, a mask of LANDLOCK_ACCESS_FS_*)
// beneath Path, a path of the new root.
type Grant struct {
	Path   string
	Access uint64
}
