package checks

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Programs is what a start needs to know to check the checks' programs
// before any builder's work is checked with them.
type Programs struct {
	Commands [][]string // host.checks, each a program and its arguments
	Env      []string   // the checks' environment (Env): its PATH finds a program named bare
	// Runnable, with a sandbox, is where a confined check finds a program
	// (sandbox.Config.Runnable); nil when the checks run unconfined.
	Runnable []string
	// Target names the branch a program of the worktree (./check.sh) is
	// looked up on, and InTree looks it up there: its mode as git writes
	// it ("" when the tree has no such path). Nil where there is no
	// repository (a worker): such programs are the repository's to hold.
	Target string
	InTree func(file string) (string, error)
}

// Check resolves each check's program as a check will run it, and says
// the first that would not start: a program of the worktree as the
// target's tree holds it (it must be there, executable), any other on
// this machine (there, executable, and in the sandbox's sight, its
// script's interpreter too). The error is one line naming the key
// (host.checks[i]), the program and what to do.
func (p Programs) Check() error {
	for i, argv := range p.Commands {
		if len(argv) == 0 {
			continue
		}
		key := fmt.Sprintf("host.checks[%d]", i)
		prog := argv[0]
		if inTree(prog) {
			if p.InTree == nil {
				continue
			}
			if err := p.inTree(prog); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			continue
		}
		found, err := lookPath(prog, p.Env)
		if err != nil {
			return fmt.Errorf("%s: %s is not on the checks' PATH (%s): install it, or name it by its absolute path", key, prog, pathOf(p.Env))
		}
		if err := p.onHost(found, ""); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	return nil
}

// inTree checks a program of the worktree as the target holds it.
func (p Programs) inTree(prog string) error {
	file := path.Clean(prog)
	mode, err := p.InTree(file)
	if err != nil {
		return fmt.Errorf("cannot read %s in %s: %w", prog, p.Target, err)
	}
	switch mode {
	case "100755", "120000": // a symbolic link is the tree's to resolve
		return nil
	case "":
		return fmt.Errorf("%s is not in %s's tree, where checks find it (they run in a worktree of what would land): commit it to %s, or change host.checks", prog, p.Target, p.Target)
	case "100644":
		return fmt.Errorf("%s is not executable in %s's tree: git update-index --chmod=+x %s, commit it to %s, then start again", prog, p.Target, file, p.Target)
	}
	return fmt.Errorf("%s is not a file in %s's tree (mode %s): change host.checks", prog, p.Target, mode)
}

// onHost checks a program of this machine's (of, when it is a script's
// interpreter, names the script).
func (p Programs) onHost(prog, of string) error {
	what := prog
	if of != "" {
		what = fmt.Sprintf("%s (the interpreter %s names on its first line)", prog, of)
	}
	fi, err := os.Stat(prog)
	switch {
	case err != nil:
		return fmt.Errorf("%s is not on this machine: install it, or change host.checks", what)
	case fi.IsDir():
		return fmt.Errorf("%s is a directory, not a program: change host.checks", what)
	case fi.Mode()&0o111 == 0:
		return fmt.Errorf("%s is not executable: chmod +x %s", what, prog)
	}
	if p.Runnable != nil {
		real, err := filepath.EvalSymlinks(prog)
		if err != nil {
			real = prog
		}
		if !p.sees(real) {
			dir := filepath.Dir(real)
			if real != prog {
				what += " (" + real + ")"
			}
			return fmt.Errorf("%s is out of the checks' sandbox, which holds the system directories, the worktree and host.sandbox_paths: add %s to host.sandbox_paths.ro", what, dir)
		}
	}
	if interp := hostInterpreter(prog); interp != "" && of == "" {
		if !filepath.IsAbs(interp) {
			return fmt.Errorf("%s names %s on its first line, not an absolute path: write #!/usr/bin/env %s", prog, interp, interp)
		}
		return p.onHost(interp, prog)
	}
	return nil
}

// sees reports whether a confined check finds file.
func (p Programs) sees(file string) bool {
	for _, dir := range p.Runnable {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			dir = r
		}
		if dir == "/" || file == dir || strings.HasPrefix(file, strings.TrimSuffix(dir, "/")+"/") {
			return true
		}
	}
	return false
}

func pathOf(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			return "PATH=" + v
		}
	}
	return "no PATH"
}
