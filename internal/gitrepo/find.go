package gitrepo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Find opens the repository dir is in: its work tree's top level, or the
// bare repository itself. It fails when dir is in none.
func Find(ctx context.Context, dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	r := &Repo{dir: abs, env: cleanEnv(os.Environ())}
	out, err := r.git(ctx, "rev-parse", "--is-bare-repository", "--absolute-git-dir")
	if err != nil {
		return nil, fmt.Errorf("%s: not in a git repository (%v)", abs, err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		return nil, fmt.Errorf("%s: git rev-parse said %q", abs, out)
	}
	if lines[0] == "true" {
		return Open(ctx, lines[1])
	}
	top, err := r.git(ctx, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("%s: not in a git repository's work tree (%v)", abs, err)
	}
	return Open(ctx, strings.TrimSpace(top))
}

// Head is the branch HEAD names (checked out, in a work tree), "" when
// HEAD is detached.
func (r *Repo) Head(ctx context.Context) (string, error) {
	out, code, err := r.run(ctx, r.dir, nil, "symbolic-ref", "--quiet", "--short", "HEAD")
	if code == 1 {
		return "", nil // detached
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}
