package gitrepo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Author is who a commit is by.
type Author struct{ Name, Email string }

// CommitFiles makes a commit on top of parent ("" for a root commit) that
// sets each file to its content ("" content with Delete removes it),
// without a working tree: through a private index. Simulated builders and
// tests commit this way into bare repositories. Nothing points at the
// commit until a ref does.
func (r *Repo) CommitFiles(ctx context.Context, parent string, files map[string]string, message string, by Author) (string, error) {
	tmp, err := os.MkdirTemp("", "gitrepo-index-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	if by.Name != "" {
		env = append(env, "GIT_AUTHOR_NAME="+by.Name, "GIT_AUTHOR_EMAIL="+by.Email,
			"GIT_COMMITTER_NAME="+by.Name, "GIT_COMMITTER_EMAIL="+by.Email)
	}
	git := func(stdin []byte, args ...string) (string, error) {
		out, _, err := r.runEnv(ctx, r.dir, stdin, env, args...)
		return strings.TrimSpace(out), err
	}
	if parent != "" {
		if _, err := git(nil, "read-tree", parent); err != nil {
			return "", err
		}
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var index strings.Builder
	for _, name := range names {
		if strings.HasPrefix(name, "/") || strings.Contains(name, "..") || strings.ContainsAny(name, "\n\x00") {
			return "", fmt.Errorf("file name %q: not a plain relative path", name)
		}
		content := files[name]
		if content == Delete {
			fmt.Fprintf(&index, "0 %s\t%s\n", strings.Repeat("0", 40), name)
			continue
		}
		blob, err := git([]byte(content), "hash-object", "-w", "--stdin")
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&index, "100644 %s\t%s\n", blob, name)
	}
	if _, err := git([]byte(index.String()), "update-index", "--add", "--remove", "--index-info"); err != nil {
		return "", err
	}
	tree, err := git(nil, "write-tree")
	if err != nil {
		return "", err
	}
	args := []string{"commit-tree", "-F", "-"}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	return git([]byte(message), append(args, tree)...)
}

// Delete, as a file's content in CommitFiles, removes the file.
const Delete = "\x00delete"

// Init makes a new repository at dir with one empty root commit on branch
// (e.g. main): bare, or with a work tree that has branch checked out.
func Init(ctx context.Context, dir, branch string, bare bool) (*Repo, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	args := []string{"init", "--quiet", "--initial-branch=" + branch}
	if bare {
		args = append(args, "--bare")
	}
	r := &Repo{dir: dir, env: cleanEnv(os.Environ())}
	if _, err := r.git(ctx, append(args, "--", dir)...); err != nil {
		return nil, err
	}
	r, err := Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	root, err := r.CommitFiles(ctx, "", nil, "root", Author{})
	if err != nil {
		return nil, err
	}
	if err := r.UpdateRef(ctx, "refs/heads/"+branch, root, "", "init"); err != nil {
		return nil, err
	}
	if !bare {
		if _, err := r.git(ctx, "reset", "--quiet", "--hard", root); err != nil {
			return nil, err
		}
	}
	return r, nil
}
