package gitjob

import (
	"context"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentforeman/foreman/internal/host/checks"
)

// checkFiles are the repository's files that define the checks: a check
// runs in a worktree of what would land, so a program of the worktree
// (./check.sh), a file an argument names (sh ci/check.sh, sh -c
// './a.sh && ./b.sh', make -f ci.mk: a word with a slash or a dot) and,
// for make, the Makefile are the branch's own. A landing that changes one was checked by the checks as it
// defines them (its receipt says so: receipt.Landing.ChecksChanged).
// What host.checks runs from the host (go, a tool on the PATH) is the
// host's, and no landing changes it.
func checkFiles(cmds [][]string) map[string]bool {
	files := map[string]bool{}
	for _, argv := range cmds {
		if len(argv) == 0 {
			continue
		}
		if filepath.Base(argv[0]) == "make" {
			for _, f := range []string{"Makefile", "makefile", "GNUmakefile"} {
				files[f] = true
			}
		}
		for i, arg := range argv {
			if i == 0 && !checks.InTree(arg) {
				continue
			}
			for _, w := range strings.FieldsFunc(arg, func(r rune) bool { return strings.ContainsRune(" \t\n;&|()<>'\"`", r) }) {
				// A file reads as one: a path or a name with a dot
				// (check.sh, ci.mk); a bare word is a command or a
				// target (go, test).
				if !strings.ContainsAny(w, "./") || strings.HasPrefix(w, "-") || strings.HasPrefix(w, "/") || strings.ContainsAny(w, "*?[$=") || strings.Contains(w, "...") {
					continue
				}
				if f := path.Clean(w); f != "." && f != ".." && !strings.HasPrefix(f, "../") {
					files[f] = true
				}
			}
		}
	}
	return files
}

// checksChanged lists the files that define the checks (checkFiles) which
// commit changes from parent, its first parent: content or mode.
func (r *Runner) checksChanged(ctx context.Context, parent, commit string) ([]string, error) {
	if len(r.checkFiles) == 0 {
		return nil, nil
	}
	changed, err := r.o.Repo.Changed(ctx, parent, commit)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range changed {
		if r.checkFiles[f] {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out, nil
}
