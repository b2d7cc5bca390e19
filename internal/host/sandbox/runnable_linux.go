//go:build linux

package sandbox

// Runnable is where a confined check finds a program to run: the system's
// directories and the paths host.sandbox_paths names (ro and rw), besides
// its worktree. A program elsewhere (a symbolic link's target included) is
// out of its sight, and foreman says so at start (checks.Programs).
func (c Config) Runnable() []string {
	out := append([]string{}, systemDirs...)
	out = append(out, c.RO...)
	return append(out, c.RW...)
}
