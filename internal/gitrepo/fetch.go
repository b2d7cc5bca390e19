package gitrepo

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// InitBare opens the bare repository at dir, making an empty one first if
// there is none: a worker's mirror of a host's repository, which holds
// only what it fetched.
func InitBare(ctx context.Context, dir string) (*Repo, error) {
	if r, err := Open(ctx, dir); err == nil {
		return r, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	r := &Repo{dir: dir, env: cleanEnv(os.Environ())}
	if _, err := r.git(ctx, "init", "--quiet", "--bare", "--", dir); err != nil {
		return nil, err
	}
	return Open(ctx, dir)
}

// Fetch fetches ref (a full name) from url, git's smart HTTP only, into
// local (a full name), and returns the commit local holds now. headers
// (an Authorization, say) go with every request, through the environment
// rather than the command line, where another process could read them.
func (r *Repo) Fetch(ctx context.Context, url, ref, local string, headers ...string) (string, error) {
	if err := checkHTTP(url); err != nil {
		return "", err
	}
	// Protocol v2: the host sends only the ref asked for.
	env := httpEnv(headers, [2]string{"protocol.version", "2"})
	_, _, err := r.runEnv(ctx, r.dir, nil, env,
		"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-auto-maintenance", "--end-of-options", url, "+"+ref+":"+local)
	if err != nil {
		return "", err
	}
	return r.RevParse(ctx, local)
}

// SetRef points ref (a full name) at commit, whatever it held.
func (r *Repo) SetRef(ctx context.Context, ref, commit, reason string) error {
	_, err := r.git(ctx, "update-ref", "-m", reason, "--end-of-options", ref, commit)
	return err
}

// DeleteRefs deletes every ref whose full name starts with prefix
// (refs/foreman/jobs/), in one transaction.
func (r *Repo) DeleteRefs(ctx context.Context, prefix string) error {
	out, err := r.git(ctx, "for-each-ref", "--format=%(refname)", "--end-of-options", prefix)
	if err != nil {
		return err
	}
	var stdin strings.Builder
	for _, ref := range strings.Fields(out) {
		fmt.Fprintf(&stdin, "delete %s\n", ref)
	}
	if stdin.Len() == 0 {
		return nil
	}
	_, _, err = r.run(ctx, r.dir, []byte(stdin.String()), "update-ref", "--stdin")
	return err
}

// Refs lists the refs whose full names start with prefix, with their
// commits, in name order.
func (r *Repo) Refs(ctx context.Context, prefix string) (map[string]string, error) {
	out, err := r.git(ctx, "for-each-ref", "--format=%(refname) %(objectname)", "--end-of-options", prefix)
	if err != nil {
		return nil, err
	}
	refs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if name, oid, ok := strings.Cut(line, " "); ok {
			refs[name] = oid
		}
	}
	return refs, nil
}
