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
)

// The --git demo makes the work real: a bare repository the builders push
// their branches to, and foreman host (in this process, with its own key)
// checking each READY and landing what AUDIT approved. The builders'
// pushes are scripted (push) so that the story has, besides the demo's
// usual troubles:
//
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
	pushes map[string]int    // pushes so far, by component
	bases  map[string]string // where each branch starts: main when its builder began
}

// begin notes where a builder's new branch starts: main as it is when the
// builder begins (work that lands meanwhile makes its landing a merge).
func (g *gitStage) begin(c, branch string) {
	main, err := g.repo.RevParse(context.Background(), "refs/heads/main")
	if err != nil || main == "" {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.bases[branch]; !ok {
		g.bases[branch] = main
	}
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
		"README.md": "# bookshop\n\nBuilt by a team of agents, coordinated by foreman.\n",
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
	g := &gitStage{dir: dir, repo: repo, root: root, id: id, pushes: map[string]int{}, bases: map[string]string{}}
	if _, err := sandbox.New(sandbox.Config{GitDir: repo.GitDir(), Home: dir}); err != nil {
		g.unconfined = err.Error()
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

// push is what builder does before each READY: commit its work on its
// branch (on top of what the branch holds, which the host may have
// rebased, or of main) and push it.
func (g *gitStage) push(builder string) func(c, branch string, fixes int) error {
	return func(c, branch string, fixes int) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		g.mu.Lock()
		n := g.pushes[c]
		g.pushes[c]++
		base := g.bases[branch]
		g.mu.Unlock()
		by := gitrepo.Author{Name: builder, Email: builder + "@example.com"}
		ref := "refs/heads/" + branch
		old, err := g.repo.RevParse(ctx, ref)
		if err != nil {
			return err
		}
		parent := old
		if parent == "" {
			parent = base
		}
		if parent == "" {
			if parent, err = g.repo.RevParse(ctx, "refs/heads/main"); err != nil {
				return err
			}
		}
		file := c + "/" + c + ".txt"
		files := map[string]string{file: fmt.Sprintf("%s, built by %s\n", c, builder)}
		typo := map[string]string{"NOTES": "welcome to the bookshop\n"}
		switch {
		case c == "db" && old == "":
			if parent, err = g.repo.CommitFiles(ctx, parent, typo, "NOTES: fix a typo", by); err != nil {
				return err
			}
		case c == "auth" && old == "":
			files["NOTES"] = "welcome to the bookshop, readers\n"
		case c == "cart" && n == 0:
			if parent, err = g.repo.CommitFiles(ctx, g.root, typo, "NOTES: fix a typo (as db did)", by); err != nil {
				return err
			}
		case c == "catalog" && n == 0:
			files[file] = "shelves = all books \n" // trailing whitespace: git diff --check fails it
		}
		if fixes > 0 {
			files[c+"/fixes.txt"] = fmt.Sprintf("%d fixes\n", fixes)
		}
		commit, err := g.repo.CommitFiles(ctx, parent, files, fmt.Sprintf("%s: the work (push %d)", c, n+1), by)
		if err != nil {
			return err
		}
		return g.repo.UpdateRef(ctx, ref, commit, old, "push")
	}
}

// config adds foreman host to c: its key in the CI and merger roles, CI
// gating on and merge mode external, and the host's own settings.
func (g *gitStage) config(c *config.Config, coordinator string) {
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
	}
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

// graph is git log --oneline --graph of main.
func (g *gitStage) graph(ctx context.Context) string {
	out, err := g.repo.Git(ctx, "log", "--oneline", "--graph", "main")
	if err != nil {
		return "git log: " + err.Error()
	}
	return out
}
