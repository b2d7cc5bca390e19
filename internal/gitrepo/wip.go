package gitrepo

import (
	"context"
	"strings"
)

// Changed lists the files commit changed since it left base: the paths
// that differ between their merge base and commit (renames seen as a
// delete and an add). Two lines of work can only conflict in files both
// changed.
func (r *Repo) Changed(ctx context.Context, base, commit string) ([]string, error) {
	mb, err := r.git(ctx, "merge-base", "--end-of-options", base, commit)
	if err != nil {
		if exitCode(err) == 1 {
			mb = "" // unrelated histories: every file of commit is its own
		} else {
			return nil, err
		}
	}
	args := []string{"diff", "--name-only", "--no-renames", "-z"}
	if mb = strings.TrimSpace(mb); mb != "" {
		args = append(args, mb, commit)
	} else {
		args = append(args, emptyTree, commit)
	}
	out, err := r.git(ctx, args...)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, f := range strings.Split(out, "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files, nil
}

// emptyTree is git's empty tree, the base of a commit with no history in
// common.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// RefsUnder lists the full names of the refs under prefix (ending in /).
func (r *Repo) RefsUnder(ctx context.Context, prefix string) ([]string, error) {
	out, err := r.git(ctx, "for-each-ref", "--format=%(refname)", "--end-of-options", prefix)
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}
