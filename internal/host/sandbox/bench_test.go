//go:build linux

package sandbox

import (
	"os/exec"
	"testing"
)

// BenchmarkSandboxNoop is the sandbox's cost per check command: a no-op
// (/bin/true) run unconfined, then confined (the re-exec of the host's
// binary, its namespaces, mounts, Landlock ruleset and exec). The
// difference is what the sandbox adds to each check (docs/PERFORMANCE.md).
func BenchmarkSandboxNoop(b *testing.B) {
	r := box(b)
	b.Run("unconfined", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command("/bin/true")
			cmd.Dir = r.Worktree
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sandboxed", func(b *testing.B) {
		s := newSandbox(b, Config{})
		for b.Loop() {
			cmd := exec.Command("/bin/true")
			cmd.Dir = r.Worktree
			p, err := s.Command(cmd, r)
			if err != nil {
				b.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			err = p.Started()
			if werr := cmd.Wait(); err == nil {
				err = werr
			}
			p.Done()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
