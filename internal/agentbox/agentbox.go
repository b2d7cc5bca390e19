// Package agentbox confines the agents foreman up starts: an agent is an
// LLM's CLI (or foreman agent) running the builder's or the auditor's
// part, and, like a builder's branch, untrusted. Each runs
//
//   - in PID, mount and IPC namespaces of its own: its first process is
//     the checks' stage (package sandbox/stage), PID 1 there, which runs
//     the agent, reaps what loses its parent and, when the agent ends,
//     ends everything else it left; foreman and the other agents are no
//     process it can name, so none it can signal, trace, or whose
//     /proc/<pid>/environ it can read; when foreman dies, the stage gets
//     SIGKILL (Pdeathsig), and the namespace ends with it;
//   - as a user of its own where foreman runs as root (Config.UIDBase: one
//     uid per agent name, kept for foreman's life), owning its workspace
//     and writable paths; in a user namespace of its own otherwise;
//   - with no capability, no_new_privs, no core dump;
//   - under Landlock: read (and run) the system and Config.Readable, read
//     and write its workspace and its Writable paths (HOME, TMPDIR, its
//     CLI's config and caches), nothing else: not the host's key,
//     host.work, the journal, host.repo, or another agent's workspace
//     (Config.Deny: Launch refuses a grant that holds or lies in one).
//
// The network is the machine's: the agent's CLI reaches its model's API,
// the room and foreman's push gate (remote.GitServer.GrantPush), the only
// way its work reaches host.repo, as refs/heads/<name>/... alone.
//
// Spec has the fields of the supervisor's LaunchSpec, in its order, so
// that a confining launcher is a conversion:
//
//	func(s agents.LaunchSpec) (agents.Process, error) {
//		p, err := agentbox.Launch(cfg, agentbox.Spec(s))
//		if err != nil {
//			return nil, err // never a nil *Process in a non-nil interface
//		}
//		return p, nil
//	}
package agentbox

import (
	"io"

	"github.com/agentforeman/foreman/internal/host/sandbox"
)

// Config is what every agent's box keeps from it, and how.
type Config struct {
	// Deny are foreman's own paths: the host's key (host.identity),
	// host.work, the journal, host.repo, the directory of the agents'
	// workspaces (each agent gets its own back), foreman's key and
	// configuration. No grant may hold one or lie in one, but an agent's
	// own workspace in the workspaces' directory.
	Deny []sandbox.Denied
	// Readable are more paths an agent may read and run besides the
	// system: its CLI where it is installed outside /usr (~/.local/bin,
	// an nvm's node), foreman's binary for foreman mcp. The program an
	// agent starts with is added by itself.
	Readable []string
	// UIDBase, where foreman runs as root, is the first of the 65536 uids
	// its agents run as (default DefaultUIDBase): each agent name gets
	// one of them, the same for foreman's life (workspace files it made
	// stay its own across restarts), and never another name's.
	UIDBase int
	// Without turns defences off, for the tests that prove each one; the
	// configuration never sets it.
	Without Without

	system *system // Prepare's
}

// system is what the system lets every agent read, outside Deny (the
// Deny it was found for).
type system struct {
	deny        []sandbox.Denied
	dirs, files []string
}

// DefaultUIDBase is the first uid of agents by default: above the ranges
// distributions give users and their subordinate ids (100000 + 65536 per
// user), below 2^31.
const DefaultUIDBase = 1_500_000_000

// Without names the defences a test turns off: the attack each stops
// must succeed without it.
type Without struct {
	// Landlock: the agent's filesystem is bounded by its uid alone.
	Landlock bool
	// OwnUID: foreman running as root runs its agents as root, without
	// any capability.
	OwnUID bool
	// PIDNamespace: the agent shares foreman's PID namespace (a /proc of
	// it all).
	PIDNamespace bool
}

// Spec is one agent to start: the fields of the supervisor's LaunchSpec
// (internal/agents), so that a launcher is one line.
type Spec struct {
	Name   string // the agent's name: its uid's key
	Dir    string // its workspace: read and write, where it starts
	Argv   []string
	Env    []string // its whole environment
	Stdout io.Writer
	Stderr io.Writer
	// Writable are more paths it reads and writes: HOME, TMPDIR (also
	// shown at /tmp), its CLI's config and caches. Made when missing.
	Writable []string
	// Written are paths in Dir and Writable that foreman wrote for it
	// since it may last have started (its CLI's MCP config, 0600, and the
	// directories made for it): its uid's, like the rest, when it has one.
	Written []string
}
