package gitrepo

import (
	"context"
	"fmt"
	"path"
	"strings"
)

// Modes of a path in a tree, as git writes them (Mode).
const (
	ModeFile       = "100644"
	ModeExecutable = "100755"
	ModeSymlink    = "120000"
)

// Mode is how commit's tree (a commit id, or a ref's name) holds file (a
// path relative to the tree's root, as a check names its program:
// ./check.sh, scripts/ci): its mode (ModeExecutable, ModeFile,
// ModeSymlink, 040000 for a directory), or "" when the tree has no such
// path.
func (r *Repo) Mode(ctx context.Context, commit, file string) (string, error) {
	e, err := r.Entry(ctx, commit, file)
	mode, _, _ := strings.Cut(e, " ")
	return mode, err
}

// Entry is file's entry in commit's tree, its mode, type and object
// ("100755 blob 3b18e5..."), or "" if the tree holds no such file: two
// trees hold file alike when their entries are equal.
func (r *Repo) Entry(ctx context.Context, commit, file string) (string, error) {
	clean := path.Clean(file)
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || clean == "." {
		return "", fmt.Errorf("%s is not a path inside the repository", file)
	}
	if commit == "" || strings.HasPrefix(commit, "-") {
		return "", fmt.Errorf("%q is not a commit", commit)
	}
	out, err := r.git(ctx, "ls-tree", "-z", commit, "--", clean)
	if err != nil {
		return "", err
	}
	// <mode> SP <type> SP <object> TAB <path> NUL
	for _, e := range strings.Split(out, "\x00") {
		meta, name, ok := strings.Cut(e, "\t")
		if ok && name == clean {
			return meta, nil
		}
	}
	return "", nil
}
