package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/gitrepo"
)

func TestInitMakesYouTheOperator(t *testing.T) {
	t.Chdir(t.TempDir())
	code, out, errOut := foreman(t, "init", "--name", "olga")
	require.Equal(t, 0, code, errOut)

	me, err := agentchat.LoadIdentity(".foreman/olga.json")
	require.NoError(t, err)
	assert.Equal(t, "olga", me.Name)
	bot, err := agentchat.LoadIdentity(".foreman/identity.json")
	require.NoError(t, err)
	for _, key := range []string{".foreman/olga.json", ".foreman/identity.json"} {
		_, open := agentchat.OpenToOthers(key)
		assert.False(t, open, key)
	}
	ignore, err := os.ReadFile(".foreman/.gitignore")
	require.NoError(t, err)
	assert.Equal(t, "*\n", string(ignore), "keys and journal stay out of git")

	c, err := config.Load("foreman.yaml", nil, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{me.AgentID()}, c.Roles.Operators)
	assert.Equal(t, ".foreman/identity.json", c.Server.Identity)
	assert.Len(t, c.Build.Components, 7)

	assert.Contains(t, out, "wrote foreman.yaml: build bookshop (7 components), room #build at ws://127.0.0.1:6667\n")
	assert.Contains(t, out, "created .foreman/identity.json: foreman, agent id "+bot.AgentID())
	assert.Contains(t, out, "created .foreman/olga.json: you (olga), agent id "+me.AgentID()+", the operator")
	assert.Contains(t, out, "\n  foreman serve\n")
	assert.Contains(t, out, "\n  foreman run\n")
	assert.Contains(t, out, "\n  foreman agent --role chat --identity .foreman/olga.json\n")
	assert.NotContains(t, out, "holds an earlier build")

	code, out, errOut = foreman(t, "validate")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "warning:", "an operator, keys kept private")

	code, _, errOut = foreman(t, "init", "--name", "olga")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "foreman.yaml exists: foreman init does not replace a config (--force does")

	assert.Equal(t, filepath.Join(".foreman", "journal"), c.Journal, "the journal is a directory beside the keys")
	require.NoError(t, os.MkdirAll(c.Journal, 0o700))
	code, out, errOut = foreman(t, "init", "--name", "olga", "--force", "--channel", "#shop")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "note: .foreman/journal holds an earlier build, which foreman run resumes")
	assert.Contains(t, out, "using .foreman/identity.json: foreman, agent id "+bot.AgentID(), "a key is never replaced")
	assert.Contains(t, out, "using .foreman/olga.json: you (olga), agent id "+me.AgentID())
	c, err = config.Load("foreman.yaml", nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "#shop", c.Server.Channel)
}

func TestInitElsewhereWithASpec(t *testing.T) {
	example, err := filepath.Abs("../../examples/bookshop")
	require.NoError(t, err)
	t.Chdir(t.TempDir())
	copyDir(t, example, "owl")
	code, out, errOut := foreman(t, "init", "shop/foreman.yaml", "--name", "olga", "--spec", "owl")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "wrote shop/foreman.yaml: build bookshop (7 components)", "the build is named after product.md")
	assert.Contains(t, out, "\n  foreman run shop/foreman.yaml\n", "a config that is not found by default is named")
	assert.Contains(t, out, "--identity shop/.foreman/olga.json\n")

	c, err := config.Load("shop/foreman.yaml", nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "../owl", c.Build.Spec, "relative to the config")
	assert.Len(t, c.Build.Components, 7)
	assert.Equal(t, filepath.Join("shop", ".foreman", "identity.json"), c.Server.Identity)
}

func TestInitRefusesBadSettings(t *testing.T) {
	t.Chdir(t.TempDir())
	code, _, errOut := foreman(t, "init", "--name", "o l g a")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `--name "o l g a": your display name`)

	code, _, errOut = foreman(t, "init", "--name", "olga", "--url", "http://x")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `server.url: "http://x" is not a ws:// or wss:// URL`)
	_, err := os.Stat(".foreman")
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing is made for a config that cannot be written")
	_, err = os.Stat("foreman.yaml")
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestDisplayName(t *testing.T) {
	for user, want := range map[string]string{"olga": "olga", "o.lga smith": "o-lga-smith", "": "operator", "foreman": "operator", "...": "operator"} {
		assert.Equal(t, want, displayName(user), user)
	}
}

// copyDir copies the files under from to to.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	}))
}

func TestPromptPrintsTheGuideAndThisBuild(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("FOREMAN_HTTP_LISTEN", freeAddr(t)) // no foreman answers there
	code, out, errOut := foreman(t, "prompt")
	require.Equal(t, 0, code, errOut)
	assert.True(t, strings.HasPrefix(out, "# Working with foreman: a guide for agents\n"))
	assert.NotContains(t, out, "## This build", "no config, no build to describe")

	code, _, errOut = foreman(t, "init", "--name", "olga")
	require.Equal(t, 0, code, errOut)
	bot, err := agentchat.LoadIdentity(".foreman/identity.json")
	require.NoError(t, err)
	code, out, errOut = foreman(t, "prompt")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "\n## This build\n\n- The room: channel `#build` on `ws://127.0.0.1:6667`.\n- foreman is `foreman`, sender id `"+bot.AgentID()+"`.")
	assert.Contains(t, out, "- Check in at least every 10m0s (TIMEOUT after 3 missed); 3 audit attempts per builder")
	assert.Contains(t, out, "  - `cart`, after `auth`, `catalog`\n")
	assert.Contains(t, out, "- Push your work in progress and name it in PROGRESS (`branch=`); the host's OVERLAP is a warning (`overlap: warn`)")
	assert.Contains(t, out, "  - foreman's MCP server: `foreman mcp --identity KEY.json --url ws://127.0.0.1:6667 --channel '#build'`;\n", "the ways in, with this build's room")
	assert.Contains(t, out, "- The build `bookshop`, its components in TASKS order, from foreman.yaml (no running foreman answered at http://"+os.Getenv("FOREMAN_HTTP_LISTEN")+
		", so components ADDed in the room are not listed; say STATUS there for the build as it stands):\n")
	assert.NotContains(t, out, "The work is real", "no host.repo, no host")
}

// foreman prompt's "This build" names the host's repository, target and
// checks, and lists the components the running foreman has (docs was
// ADDed in the room; the config has three), from its board.
func TestPromptSaysTheHostAndTheLiveComponents(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	board := strings.TrimPrefix(statusServer(t, midBuild()).URL, "http://")
	writeFile(t, dir, "foreman.yaml", "build:\n  name: shop\n  components:\n    - name: db\n    - name: api\n      depends_on: [db]\n    - name: web\n      depends_on: [api]\n"+
		"http:\n  listen: "+board+"\nrules:\n  ci_gating: on\n  merge: external\nhost:\n  repo: shop.git\n  target: trunk\n  checks: [\"make test\", \"go vet ./...\"]\n")
	code, out, errOut := foreman(t, "prompt")
	require.Equal(t, 0, code, errOut)
	repo := filepath.Join(dir, "shop.git")
	assert.Contains(t, out, "- The work is real: foreman host checks each READY in the git repository `"+repo+"`. Push your branch there (`git push "+repo+" HEAD:refs/heads/<you>/<c>`)")
	assert.Contains(t, out, "It checks what would land on `trunk` (checks: `make test`, `go vet ./...`)")
	assert.Contains(t, out, "- The build `shop`, its components in TASKS order, as the running foreman has them (its board, http://"+board+"):\n"+
		"  - `db`\n  - `api`, after `db`\n  - `web`, after `api`\n  - `docs`, after `web`\n")
}

// In a git repository foreman init offers it as host.repo (relative to the
// config), with the branch checked out there as the target, CI gating on
// and merge external: foreman up then runs the host. --no-repo leaves the
// host out; --repo names another repository.
func TestInitOffersTheRepositoryItIsIn(t *testing.T) {
	dir := t.TempDir()
	_, err := gitrepo.Init(context.Background(), dir, "trunk", false)
	require.NoError(t, err)
	t.Chdir(dir)
	code, out, errOut := foreman(t, "init", "--name", "olga", "ops/foreman.yaml")
	require.Equal(t, 0, code, errOut)
	c, err := config.Load("ops/foreman.yaml", nil, nil)
	require.NoError(t, err)
	real, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("ops", ".."), c.Host.Repo, "relative to the config")
	assert.Equal(t, "trunk", c.Host.Target, "the branch checked out")
	assert.True(t, c.Rules.CIGating)
	assert.Equal(t, coordinator.MergeExternal, c.Rules.Merge)
	require.NoError(t, c.RequireHost())
	assert.Contains(t, out, "host.repo: "+real+" (target trunk): foreman up checks builders' branches there")
	assert.Contains(t, out, "\n  foreman up ops/foreman.yaml\nruns the room, foreman, the host and the board in one process")

	code, out, errOut = foreman(t, "init", "--name", "olga", "--force", "--no-repo", "ops/foreman.yaml")
	require.Equal(t, 0, code, errOut)
	c, err = config.Load("ops/foreman.yaml", nil, nil)
	require.NoError(t, err)
	assert.Empty(t, c.Host.Repo)
	assert.False(t, c.Rules.CIGating)
	assert.NotContains(t, out, "host.repo")

	bare := filepath.Join(t.TempDir(), "shop.git")
	_, err = gitrepo.Init(context.Background(), bare, "main", true)
	require.NoError(t, err)
	code, out, errOut = foreman(t, "init", "--name", "olga", "--force", "--repo", bare, "ops/foreman.yaml")
	require.Equal(t, 0, code, errOut)
	c, err = config.Load("ops/foreman.yaml", nil, nil)
	require.NoError(t, err)
	abs, err := filepath.Abs(c.Host.Repo)
	require.NoError(t, err)
	assert.Equal(t, bare, abs)
	assert.Equal(t, "main", c.Host.Target)
	assert.NotContains(t, out, "has no branch")

	code, _, errOut = foreman(t, "init", "--name", "olga", "--force", "--repo", t.TempDir(), "ops/foreman.yaml")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "foreman: --repo: ")
	assert.Contains(t, errOut, "not a git repository")
}

// Your own components, with what each waits for, in one flag: no YAML to
// edit (issue 38, item 5). The bookshop only when nothing is named.
func TestInitWithYourComponents(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "calc")
	require.NoError(t, os.Mkdir(dir, 0o755))
	t.Chdir(dir)
	code, out, errOut := foreman(t, "init", "--name", "olga", "--no-repo", "--components", "lexer parser:lexer evaluator:parser cli:evaluator,parser")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "wrote foreman.yaml: build calc (4 components)")
	c, err := config.Load("foreman.yaml", nil, nil)
	require.NoError(t, err)
	assert.Equal(t, []coordinator.Component{{Name: "lexer"}, {Name: "parser", Deps: []string{"lexer"}},
		{Name: "evaluator", Deps: []string{"parser"}}, {Name: "cli", Deps: []string{"evaluator", "parser"}}}, c.Build.Components)
	data, err := os.ReadFile("foreman.yaml")
	require.NoError(t, err)
	assert.NotContains(t, string(data), "starter build", "they are yours")

	for _, bad := range []struct{ components, why string }{
		{"a:b b:a", "--components: a dependency cycle: a -> b -> a"},
		{"lexer parser:lexr", `"lexr" is not a component (did you mean lexer?)`},
		{":x", `--components: ":x" names no component before its colon`},
		{" ", "--components: names no component"},
	} {
		code, _, errOut := foreman(t, "init", "--force", "--no-repo", "--components", bad.components)
		assert.Equal(t, 1, code, bad.components)
		assert.Contains(t, errOut, bad.why, bad.components)
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %s", errOut)
	}
	code, _, errOut = foreman(t, "init", "--force", "--no-repo", "--components", "a", "--spec", "owl")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "--components and --spec: give one")
}
