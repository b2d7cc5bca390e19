package demo

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host/live"
	"github.com/agentforeman/foreman/internal/host/sandbox"
	"github.com/agentforeman/foreman/internal/tooling/sim"
	"github.com/agentforeman/foreman/internal/verify"
)

// The --git demo makes the work real: a bare repository the builders push
// their branches to, and foreman host (in this process, with its own key)
// checking each READY and landing what AUDIT approved. The builders push
// as foreman agent --repo does (sim.Pusher: work in progress at each
// PROGRESS, naming the branch; the work before READY), scripted (pusher)
// so that the story has, besides the demo's usual troubles:
//
//   - auth's and catalog's work in progress reword the same line of the
//     README: the host says OVERLAP before either is READY, and auth's
//     builder leaves that line to catalog;
//   - cal goes silent on catalog with work pushed: the host pins it as
//     refs/foreman/handoff/catalog/1 when cal times out, and tells ada,
//     who takes catalog over, to start from it;
//   - db carries a typo fix to NOTES as a commit of its own; auth later
//     rewords that line;
//   - dex starts cart from the first main and picks up the same typo fix:
//     merging cart conflicts on NOTES, but a rebase drops the fix main has
//     already, and the host rebases cart and tells dex;
//   - catalog's first push leaves trailing whitespace, which the check
//     (git diff --check) fails: the builder is stepped back and fixes it.
//
// Every landing is a compare-and-swap of main to a tree that passed; the
// demo ends with git log --graph of main.

// emptyTree is git's empty tree: git diff --check against it checks every
// file of the tree checked out.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// hostName is the host's display name in the room.
const hostName = "host"

type gitStage struct {
	dir  string
	repo *gitrepo.Repo
	root string // main's first commit with files: where dex starts cart from
	id   *agentchat.Identity
	// unconfined says why the host's checks run unsandboxed ("" when they
	// run sandboxed, as foreman host runs them): the demo's own check is
	// trusted, and the demo must run where no sandbox can be made (not
	// Linux, inside a sandboxed check).
	unconfined string

	mu     sync.Mutex
	pushes map[string]int // pushes before READY so far, by component
	host   config.Config  // the host's part of the configuration, for foreman verify
}

func newGitStage(ctx context.Context, dir string) (*gitStage, error) {
	repo, err := gitrepo.Init(ctx, filepath.Join(dir, "bookshop.git"), "main", true)
	if err != nil {
		return nil, fmt.Errorf("cannot make the demo's repository (is git installed?): %w", err)
	}
	empty, err := repo.RevParse(ctx, "refs/heads/main")
	if err != nil {
		return nil, err
	}
	root, err := repo.CommitFiles(ctx, empty, map[string]string{
		"NOTES":     "welcom to the bookshop\n",
		"README.md": readme,
	}, "start the bookshop", gitrepo.Author{Name: "olga", Email: "olga@example.com"})
	if err != nil {
		return nil, err
	}
	if err := repo.UpdateRef(ctx, "refs/heads/main", root, empty, "demo"); err != nil {
		return nil, err
	}
	id, err := agentchat.NewIdentity(hostName)
	if err != nil {
		return nil, err
	}
	if err := id.Save(filepath.Join(dir, "host.json")); err != nil {
		return nil, err
	}
	g := &gitStage{dir: dir, repo: repo, root: root, id: id, pushes: map[string]int{}}
	if s, err := sandbox.New(sandbox.Config{GitDir: repo.GitDir(), Home: dir}); err != nil {
		g.unconfined = err.Error()
	} else {
		s.Close()
	}
	return g, nil
}

// sandboxNote says how the host's checks run.
func (g *gitStage) sandboxNote() string {
	if g.unconfined != "" {
		return "the checks run unconfined here (" + g.unconfined + ")"
	}
	return "each check runs sandboxed, as foreman host runs it"
}

// pusher is builder's pushes (sim.Pusher, as foreman agent --repo
// makes them: its work in progress at each PROGRESS, naming the branch,
// its work before each READY, and a start from what a builder before it
// left), with the story's twists.
func (g *gitStage) pusher(builder string, hosts []string) (*sim.Pusher, error) {
	p, err := sim.NewPusher(g.repo.Dir(), "main", builder, hosts)
	if err != nil {
		return nil, err
	}
	by := gitrepo.Author{Name: builder, Email: builder + "@example.com"}
	typo := map[string]string{"NOTES": "welcome to the bookshop\n"}
	p.Edit = func(ctx context.Context, c string, wip bool, parent string, files map[string]string) (string, error) {
		g.mu.Lock()
		n := g.pushes[c]
		if !wip {
			g.pushes[c]++
		}
		g.mu.Unlock()
		if wip {
			// auth's and catalog's work in progress both reword the
			// README's last line before their first READY: the host says
			// OVERLAP, and auth's builder leaves the README to catalog.
			switch {
			case c == "auth" && n == 0:
				files["README.md"] = readme + "Sign in once, stay signed in.\n"
			case c == "catalog" && n == 0:
				files["README.md"] = readme + "Browse the shelves by author.\n"
			}
			return parent, nil
		}
		var err error
		switch {
		case c == "db" && n == 0:
			parent, err = g.repo.CommitFiles(ctx, parent, typo, "NOTES: fix a typo", by)
		case c == "auth" && n == 0:
			files["NOTES"] = "welcome to the bookshop, readers\n"
			files["README.md"] = readme // heard the OVERLAP: catalog's to write
		case c == "cart" && n == 0:
			parent, err = g.repo.CommitFiles(ctx, g.root, typo, "NOTES: fix a typo (as db did)", by)
		case c == "catalog" && n == 0:
			files[c+"/"+c+".txt"] = "shelves = all books \n" // trailing whitespace: git diff --check fails it
		}
		return parent, err
	}
	return p, nil
}

// readme is the README main starts with.
const readme = "# bookshop\n\nBuilt by a team of agents, coordinated by foreman.\n"

// config adds foreman host to c: its key in the CI and merger roles, CI
// gating on and merge mode external, and the host's own settings.
func (g *gitStage) config(c *config.Config, coordinator string, minute time.Duration) {
	c.Roles.CI = append(c.Roles.CI, g.id.AgentID())
	c.Roles.Merger = append(c.Roles.Merger, g.id.AgentID())
	c.Rules.CIGating = true
	c.Rules.Merge = "external"
	check := []string{"git", "diff", "--check", emptyTree, "HEAD"}
	c.Host = config.Host{
		Repo: g.repo.Dir(), Target: "main", Checks: [][]string{check}, CheckLines: []string{"git diff --check " + emptyTree + " HEAD"},
		AutoRebase: true, MaxParallel: 2, Logs: filepath.Join(g.dir, "host", "logs"),
		Ledger: filepath.Join(g.dir, "host", "ledger.jsonl"), Work: filepath.Join(g.dir, "host", "work"),
		Identity: filepath.Join(g.dir, "host.json"), Name: hostName, Coordinator: coordinator, LogLimit: 1 << 20,
		Unconfined: g.unconfined != "",
		// As foreman host's default, 30 s, in the demo's contract time.
		OverlapInterval: minute / 2,
	}
	g.host = config.Config{Host: c.Host, Build: c.Build}
}

// run is foreman host until ctx ends.
func (g *gitStage) run(ctx context.Context, c *config.Config, log zerolog.Logger) error {
	s, err := live.Prepare(ctx, c, log)
	if err != nil {
		return err
	}
	defer s.Close()
	return live.Run(ctx, s.Options)
}

// verify is foreman verify on the demo's repository, as its table: every
// commit on main since the first landing was landed by the host with a
// receipt that holds, or the table says which and why (ok false).
func (g *gitStage) verify(ctx context.Context) (string, bool) {
	o, err := verify.Configure(ctx, &g.host, nil, "")
	if err != nil {
		return "foreman verify: " + err.Error() + "\n", false
	}
	rep, err := verify.Run(ctx, o)
	if err != nil {
		return "foreman verify: " + err.Error() + "\n", false
	}
	return rep.Table(), rep.OK()
}

// graph is git log --oneline --graph of main.
func (g *gitStage) graph(ctx context.Context) string {
	out, err := g.repo.Git(ctx, "log", "--oneline", "--graph", "main")
	if err != nil {
		return "git log: " + err.Error()
	}
	return out
}
