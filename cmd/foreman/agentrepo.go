package main

import (
	"context"
	"fmt"
	"time"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/tooling/sim"
)

// repoPusher is a scripted builder's pushes (foreman agent --role builder
// --repo DIR): before each READY it commits its work to the repository
// foreman host checks, on the branch READY names, as a real builder's push
// would. Without it the host answers every READY with "no branch", and
// the component ends escalated as ci-exhausted.
type repoPusher struct {
	repo   *gitrepo.Repo
	target string // the branch work starts from: host.target
	name   string // the builder: branch prefix and author
	bases  map[string]string
}

func newRepoPusher(dir, target, name string) (*repoPusher, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	repo, err := gitrepo.Open(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("--repo: %w", err)
	}
	if at, err := repo.RevParse(ctx, "refs/heads/"+target); err != nil || at == "" {
		return nil, fmt.Errorf("--repo %s: no branch %s to start work from (host.target); make its first commit first (%v)", dir, target, err)
	}
	return &repoPusher{repo: repo, target: target, name: name, bases: map[string]string{}}, nil
}

// hooks puts the pushes in a builder's script.
func (p *repoPusher) hooks(s *sim.Builder) {
	s.Begin, s.Push = p.begin, p.push
}

// begin notes where a new branch starts: the target as it is when the
// builder starts work, so that work landed meanwhile makes a real merge.
func (p *repoPusher) begin(_, branch string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if at, err := p.repo.RevParse(ctx, "refs/heads/"+p.target); err == nil && at != "" {
		p.bases[branch] = at
	}
}

// push commits c's work on top of what the branch holds (which the host
// may have rebased), or of where the builder began, and moves the branch
// there by compare-and-swap, as a push that is not forced would.
func (p *repoPusher) push(c, branch string, fixes int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ref := "refs/heads/" + branch
	old, err := p.repo.RevParse(ctx, ref)
	if err != nil {
		return err
	}
	parent := old
	if parent == "" {
		parent = p.bases[branch]
	}
	if parent == "" {
		if parent, err = p.repo.RevParse(ctx, "refs/heads/"+p.target); err != nil {
			return err
		}
	}
	files := map[string]string{c + "/" + c + ".txt": fmt.Sprintf("%s, built by %s\n", c, p.name)}
	msg := c + ": the work"
	if fixes > 0 {
		files[c+"/fixes.txt"] = fmt.Sprintf("%d fixes\n", fixes)
		msg = fmt.Sprintf("%s: fix %d", c, fixes)
	}
	commit, err := p.repo.CommitFiles(ctx, parent, files, msg, gitrepo.Author{Name: p.name, Email: p.name + "@foreman.invalid"})
	if err != nil {
		return err
	}
	return p.repo.UpdateRef(ctx, ref, commit, old, "foreman agent "+p.name+": push")
}
