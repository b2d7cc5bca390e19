package sim

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/protocol"
)

// Pusher is a scripted builder's pushes (foreman agent --role builder
// --repo DIR, and the demos): it commits its work to the repository foreman host checks,
// on its own branch, as a real builder's pushes would: its work in progress
// at each PROGRESS (which names the branch), and the work before each
// READY. Without it the host answers every READY with "no branch", and the
// component ends escalated as ci-exhausted. A builder that takes over
// from one that left starts from the work that one left: the branch the
// ACK names, then the commit the host pinned (contract section 10).
type Pusher struct {
	repo   *gitrepo.Repo
	target string // the branch work starts from: host.target
	name   string // the builder: branch prefix and author
	hosts  []string
	mu     sync.Mutex
	bases  map[string]string // where each branch starts, until it is pushed
	resets map[string]string // a commit handed over after the branch was pushed: the next push starts from it

	// Edit, if set, may change a push before it is made (a story's
	// twists): the files, and the commit it goes on top of (it may commit
	// on parent first and return that). wip says a PROGRESS step's push.
	Edit func(ctx context.Context, c string, wip bool, parent string, files map[string]string) (string, error)
}

// NewPusher is builder name's pushes to the repository at dir, its work
// started from target; hosts are the CI role's ids, whose handoff lines
// it reads.
func NewPusher(dir, target, name string, hosts []string) (*Pusher, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	repo, err := gitrepo.Open(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("--repo: %w", err)
	}
	if at, err := repo.RevParse(ctx, "refs/heads/"+target); err != nil || at == "" {
		return nil, fmt.Errorf("--repo %s: no branch %s to start work from (host.target); make its first commit first (%v)", dir, target, err)
	}
	return &Pusher{repo: repo, target: target, name: name, hosts: hosts, bases: map[string]string{}, resets: map[string]string{}}, nil
}

// Hooks puts the pushes in a builder's script.
func (p *Pusher) Hooks(s *Builder) {
	s.Begin, s.Push, s.PushWIP, s.Handed, s.Hosts = p.begin, p.push, p.pushWIP, p.handed, p.hosts
}

// begin notes where a new branch starts: the target as it is when the
// builder starts work, so that work landed meanwhile makes a real merge.
func (p *Pusher) begin(_, branch string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if at, err := p.repo.RevParse(ctx, "refs/heads/"+p.target); err == nil && at != "" {
		p.mu.Lock()
		p.bases[branch] = at
		delete(p.resets, branch)
		p.mu.Unlock()
	}
}

// handed starts the branch from the work the last builder left: from is
// the branch foreman's ACK named, or the commit the host pinned. A name
// that is not a ref, or names nothing here, changes nothing: the builder
// starts from the target, as with nothing handed over.
func (p *Pusher) handed(_, branch, from string) {
	ref, err := protocol.CheckRef(from)
	if err != nil {
		return
	}
	name := ref.Commit
	if ref.Branch != "" {
		name = ref.Branch
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	at, err := p.repo.RevParse(ctx, name)
	if err != nil || at == "" {
		return
	}
	own, err := p.repo.RevParse(ctx, "refs/heads/"+branch)
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if own == "" {
		p.bases[branch] = at
	} else if own != at {
		p.resets[branch] = at
	}
}

// pushWIP commits c's work in progress at a PROGRESS step.
func (p *Pusher) pushWIP(c, branch string, step int) error {
	return p.commit(c, true, branch, map[string]string{c + "/wip.txt": fmt.Sprintf("%s, step %d, by %s\n", c, step, p.name)},
		fmt.Sprintf("%s: work in progress, step %d", c, step))
}

// push commits c's work before READY.
func (p *Pusher) push(c, branch string, fixes int) error {
	files := map[string]string{c + "/" + c + ".txt": fmt.Sprintf("%s, built by %s\n", c, p.name)}
	msg := c + ": the work"
	if fixes > 0 {
		files[c+"/fixes.txt"] = fmt.Sprintf("%d fixes\n", fixes)
		msg = fmt.Sprintf("%s: fix %d", c, fixes)
	}
	return p.commit(c, false, branch, files, msg)
}

// commit puts files on top of what the branch holds (which the host may
// have rebased), or of where the builder began, and moves the branch
// there by compare-and-swap, as a push that is not forced would; after a
// handover that came once the branch was pushed, on top of what was
// handed over.
func (p *Pusher) commit(c string, wip bool, branch string, files map[string]string, msg string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ref := "refs/heads/" + branch
	old, err := p.repo.RevParse(ctx, ref)
	if err != nil {
		return err
	}
	p.mu.Lock()
	parent, reset := old, p.resets[branch]
	if reset != "" {
		parent = reset
	}
	if parent == "" {
		parent = p.bases[branch]
	}
	p.mu.Unlock()
	if parent == "" {
		if parent, err = p.repo.RevParse(ctx, "refs/heads/"+p.target); err != nil {
			return err
		}
	}
	if p.Edit != nil {
		if parent, err = p.Edit(ctx, c, wip, parent, files); err != nil {
			return err
		}
	}
	commit, err := p.repo.CommitFiles(ctx, parent, files, msg, gitrepo.Author{Name: p.name, Email: p.name + "@foreman.invalid"})
	if err != nil {
		return err
	}
	if err := p.repo.UpdateRef(ctx, ref, commit, old, "foreman agent "+p.name+": push"); err != nil {
		return err
	}
	if reset != "" {
		p.mu.Lock()
		if p.resets[branch] == reset {
			delete(p.resets, branch)
		}
		p.mu.Unlock()
	}
	return nil
}
