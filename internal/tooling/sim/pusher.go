package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/protocol"
)

// Pusher is a scripted builder's pushes (foreman agent --role builder
// --repo DIR, and the demos; or --push-url URL from its own clone, as an
// agent foreman up confines pushes): it commits its work to the repository
// foreman host checks, straight or through the push gate, on its own branch, as a real builder's pushes would: its work in progress
// at each PROGRESS (which names the branch), and the work before each
// READY. Without it the host answers every READY with "no branch", and the
// component ends escalated as ci-exhausted. A builder that takes over
// from one that left starts from the work that one left: the branch the
// ACK names, then the commit the host pinned (contract section 10).
type Pusher struct {
	store  store
	target string // the branch work starts from: host.target
	name   string // the builder: its commits' author
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
	return newPusher(direct{repo}, target, name, hosts), nil
}

// NewGatePusher is builder name's pushes from its own clone at dir (its
// workspace) to url, a push gate that takes its bearer token (foreman
// up's FOREMAN_PUSH_URL and FOREMAN_PUSH_TOKEN): it commits in the clone
// and pushes each commit to its branch there, having fetched first what
// the gate shows (the target, the branches, the host's handoff pins).
func NewGatePusher(dir, url, token, target, name string, hosts []string) (*Pusher, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	repo, err := gitrepo.Open(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("--workspace: %w", err)
	}
	if token == "" {
		return nil, fmt.Errorf("--push-url %s: no token in FOREMAN_PUSH_TOKEN; foreman up sets it for each agent it starts (a token is never a flag, where ps would show it)", url)
	}
	g := &gate{repo0: repo, url: url, header: "Authorization: Bearer " + token}
	if err := g.sync(ctx); err != nil {
		return nil, fmt.Errorf("--push-url %s: %w", url, err)
	}
	if at, err := g.resolve(ctx, "refs/heads/"+target); err != nil || at == "" {
		return nil, fmt.Errorf("--push-url %s: no branch %s to start work from (host.target) there (%v)", url, target, err)
	}
	return newPusher(g, target, name, hosts), nil
}

func newPusher(s store, target, name string, hosts []string) *Pusher {
	return &Pusher{store: s, target: target, name: name, hosts: hosts, bases: map[string]string{}, resets: map[string]string{}}
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
	if p.store.sync(ctx) != nil {
		return // as with no target: the first push starts from it
	}
	if at, err := p.store.resolve(ctx, "refs/heads/"+p.target); err == nil && at != "" {
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
	if p.store.sync(ctx) != nil {
		return
	}
	at, err := p.store.resolve(ctx, name)
	if err != nil || at == "" {
		return
	}
	own, err := p.store.resolve(ctx, "refs/heads/"+branch)
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
// handed over. A clone's push that finds the branch moved at the gate
// (the host rebased it meanwhile) fetches and tries again on the new
// head, a few times.
func (p *Pusher) commit(c string, wip bool, branch string, files map[string]string, msg string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for try := 1; ; try++ {
		err := p.commitOnce(ctx, c, wip, branch, files, msg)
		if !errors.Is(err, gitrepo.ErrMoved) || try >= p.store.tries() {
			return err
		}
	}
}

func (p *Pusher) commitOnce(ctx context.Context, c string, wip bool, branch string, files map[string]string, msg string) error {
	if err := p.store.sync(ctx); err != nil {
		return err
	}
	ref := "refs/heads/" + branch
	old, err := p.store.resolve(ctx, ref)
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
		if parent, err = p.store.resolve(ctx, "refs/heads/"+p.target); err != nil {
			return err
		}
	}
	if p.Edit != nil {
		if parent, err = p.Edit(ctx, c, wip, parent, files); err != nil {
			return err
		}
	}
	commit, err := p.store.repo().CommitFiles(ctx, parent, files, msg, gitrepo.Author{Name: p.name, Email: p.name + "@foreman.invalid"})
	if err != nil {
		return err
	}
	if err := p.store.update(ctx, ref, commit, old, "foreman agent "+p.name+": push"); err != nil {
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

// store is where a Pusher's work goes, as it sees it: host.repo itself
// (direct), or a clone pushing through a gate. Names are the full names
// of the place's refs (refs/heads/b1/api) or commit ids.
type store interface {
	// sync brings what resolve sees up to date.
	sync(ctx context.Context) error
	// resolve is the commit name holds; "" for none.
	resolve(ctx context.Context, name string) (string, error)
	// repo is where commits are made.
	repo() *gitrepo.Repo
	// update moves ref from old ("" none) to new, or fails with
	// gitrepo.ErrMoved if it holds something else now.
	update(ctx context.Context, ref, new, old, reason string) error
	// tries bounds the attempts of a push that finds its ref moved.
	tries() int
}

// direct is host.repo itself (foreman agent --repo, the demos): a ref
// moved under the pusher is said, as before, and not tried again.
type direct struct{ r *gitrepo.Repo }

func (d direct) sync(context.Context) error { return nil }
func (d direct) resolve(ctx context.Context, name string) (string, error) {
	return d.r.RevParse(ctx, name)
}
func (d direct) repo() *gitrepo.Repo { return d.r }
func (d direct) update(ctx context.Context, ref, new, old, reason string) error {
	return d.r.UpdateRef(ctx, ref, new, old, reason)
}
func (d direct) tries() int { return 1 }

// gate is a builder's own clone (its workspace) and the push gate it
// pushes through: the gate's refs are mirrored under mirror (never the
// clone's own branches, which are the builder's), commits are made in
// the clone, and each goes to the gate by a push that names the commit
// the pusher saw there.
type gate struct {
	repo0  *gitrepo.Repo
	url    string
	header string // the Authorization, in git's environment, never its command line
}

// mirror is where a clone keeps what the gate shows.
const mirror = "refs/foreman/gate/"

// gateTries bounds a push that finds its branch moved: the host rebases
// a branch once per landing ahead of it.
const gateTries = 4

func (g *gate) sync(ctx context.Context) error {
	return g.repo0.FetchMirror(ctx, g.url, map[string]string{"refs/heads/": mirror + "heads/", "refs/foreman/handoff/": mirror + "handoff/"}, g.header)
}

func (g *gate) resolve(ctx context.Context, name string) (string, error) {
	if rest, ok := strings.CutPrefix(name, "refs/"); ok {
		name = mirror + rest
	}
	return g.repo0.RevParse(ctx, name)
}

func (g *gate) repo() *gitrepo.Repo { return g.repo0 }

func (g *gate) update(ctx context.Context, ref, new, old, _ string) error {
	return g.repo0.Push(ctx, g.url, ref, new, old, g.header)
}

func (g *gate) tries() int { return gateTries }
