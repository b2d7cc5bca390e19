package agents

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/agentforeman/foreman/agentchat"
)

// Marker is the file that says foreman made a workspace: a directory
// without it is somebody else's, and foreman up leaves it alone.
const Marker = ".foreman-workspace"

// Workspace is one agent's own directory, beside the journal
// (.foreman/agents/NAME), kept across its restarts and foreman up's.
type Workspace struct {
	Dir  string // the workspace
	Work string // where the agent works: its clone of the target (or an empty directory without host.repo)
	Key  string // its identity file
	Log  string // its output, appended at each start
	Home string // its private HOME
	Tmp  string // its private TMPDIR
	ID   string // its sender id
}

// MakeWorkspace makes (or finds again) name's workspace under root: its
// clone of repo's target (made once, before the agent first starts; kept
// since, uncommitted work and all), its key, a HOME and a TMPDIR. A
// directory there that foreman did not make is refused, never touched.
func MakeWorkspace(ctx context.Context, root, name, repo, target string) (Workspace, error) {
	dir := filepath.Join(root, name)
	w := Workspace{Dir: dir, Work: filepath.Join(dir, "work"), Key: filepath.Join(dir, "identity.json"),
		Log: filepath.Join(dir, "agent.log"), Home: filepath.Join(dir, "home"), Tmp: filepath.Join(dir, "tmp")}
	if _, err := os.Lstat(dir); err == nil {
		if _, err := os.Lstat(filepath.Join(dir, Marker)); err != nil {
			return w, fmt.Errorf("agent %s: %s is there, and foreman did not make it (no %s in it); move it away, or give the agent another name", name, dir, Marker)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return w, fmt.Errorf("agent %s: %s: %w", name, dir, err)
	} else {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return w, fmt.Errorf("agent %s: cannot make its workspace: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, Marker), []byte("foreman up made this workspace for agent "+name+"\n"), 0o600); err != nil {
			return w, fmt.Errorf("agent %s: cannot make its workspace: %w", name, err)
		}
	}
	for _, d := range []string{w.Home, w.Tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return w, fmt.Errorf("agent %s: %w", name, err)
		}
	}
	if err := clone(ctx, name, repo, target, w.Work); err != nil {
		return w, err
	}
	id, _, err := agentchat.LoadOrCreateIdentity(w.Key, name)
	if err != nil {
		return w, fmt.Errorf("agent %s: its key %s: %w", name, w.Key, err)
	}
	w.ID = id.AgentID()
	return w, nil
}

// clone makes work a clone of repo's target, once: into a directory
// beside it, renamed into place when complete, so that a clone that
// failed (a full disk) leaves nothing that looks like one.
func clone(ctx context.Context, name, repo, target, work string) error {
	if _, err := os.Lstat(work); err == nil {
		return nil // made before: the agent's, uncommitted work and all
	}
	if repo == "" {
		return os.MkdirAll(work, 0o700)
	}
	part := work + ".part"
	_ = os.RemoveAll(part)
	if out, err := git(ctx, "", "clone", "--quiet", "--no-hardlinks", "--branch", target, "--", repo, part); err != nil {
		full := noSpace(out, filepath.Dir(work)) // before the part is removed: it may be what filled the disk
		_ = os.RemoveAll(part)
		if full {
			return fmt.Errorf("agent %s: cannot clone host.repo %s (branch %s) into its workspace: the disk is full (git: %v); free space where its workspace is, at %s, then start foreman up again",
				name, repo, target, err, filepath.Dir(work))
		}
		return fmt.Errorf("agent %s: cannot clone host.repo %s (branch %s) into its workspace: %v", name, repo, target, err)
	}
	if err := os.Rename(part, work); err != nil {
		_ = os.RemoveAll(part)
		return fmt.Errorf("agent %s: its clone: %w", name, err)
	}
	return nil
}

// noSpace reports whether a git that failed, having said out, ran out of
// space on dir's disk. git says so when a write of its objects failed
// (ENOSPC, or EDQUOT over a quota), but not when one of its checkout did
// ("unable to write file"): then dir's disk is asked directly, by
// allocating a probe of probeSize beside the clone, before the clone is
// removed. Its statfs would not do: btrfs can be out of metadata space
// with data blocks free, root writes into ext4's reserved blocks while it
// shows none available, and a busy disk may have a few blocks free again
// by the time it is asked.
func noSpace(out, dir string) bool {
	if strings.Contains(out, "No space left on device") || strings.Contains(out, "Disk quota exceeded") {
		return true
	}
	f, err := os.CreateTemp(dir, ".foreman-space-probe-*")
	if err != nil {
		return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	err = allocate(f, probeSize)
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// probeSize is how much a disk must have free for a failed clone not to
// be blamed on it.
const probeSize = 1 << 20

// git runs git and returns what it said; its error is the line that says
// why it failed: its first fatal: line, else its first error: line, else
// its last (after a failed checkout, git's last lines are advice on
// retrying in the clone, which foreman removes).
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err == nil {
		return out.String(), nil
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	why := strings.TrimSpace(lines[len(lines)-1])
	for _, prefix := range []string{"fatal:", "error:"} {
		if i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, prefix) }); i >= 0 {
			why = strings.TrimSpace(lines[i])
			break
		}
	}
	if why == "" {
		return out.String(), err
	}
	return out.String(), errors.New(why)
}

// write writes n bytes to f and syncs them, so that a disk without them
// says so now rather than at a later flush.
func write(f *os.File, n int64) error {
	buf := make([]byte, 64<<10)
	for ; n > 0; n -= int64(len(buf)) {
		if _, err := f.Write(buf[:min(n, int64(len(buf)))]); err != nil {
			return err
		}
	}
	return f.Sync()
}
