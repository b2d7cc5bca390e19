package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/tooling/demo"
	"github.com/agentforeman/foreman/protocol"
)

// initFlags are foreman init's settings.
type initFlags struct {
	name, identity, url, channel, spec, build string
	components                                string
	repo                                      string
	force, verbose, noRepo                    bool
}

func (a *app) initCommand() *cobra.Command {
	var f initFlags
	cmd := &cobra.Command{
		Use:   "init [CONFIG]",
		Short: "Write a config with you as the operator, and the identities it needs",
		Long: `init writes a configuration (foreman.yaml here by default, which every command
then reads without being told) and creates the two identities it names:
foreman's own key, and yours, listed as the build's operator, so that you can
settle what foreman escalates (RESOLVE, RELEASE, ASSIGN, PAUSE, ...). Keys go
in .foreman/ beside the config, mode 0600, kept out of git by a .gitignore.
An identity file that exists already is used as it is: a new key would be a
new agent id.

The build is yours with --components: its names, in the order they are
built, each with what it waits for after a colon ("lexer parser:lexer
evaluator:parser cli:evaluator,parser"). --spec names an owl spec directory
instead; init then prints the components it read, as foreman validate does:
one line each with its dependencies and the words of the spec that named them
(-v lists every "depends on:" bullet and what it was read as). With neither,
it is the bookshop of foreman's README. init refuses to replace a config that
exists unless --force.

In a git repository (or with --repo), init offers it as host.repo: the
repository builders push their branches to, and where foreman host (run by
foreman up) lands approved work, on the branch checked out there
(host.target). It turns CI gating on and merge mode external for that, and
leaves host.checks for you to fill in. --no-repo leaves the host out.`,
		Example: `  foreman init
  foreman init --components "lexer parser:lexer evaluator:parser cli:evaluator"
  foreman init --name olga --spec ./owl
  foreman init --repo ../shop.git
  foreman init shop/foreman.yaml --url ws://chat.example:6667 --identity ~/.agentchat/identity.json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := configArg(args)
			if file == "" {
				file = defaultConfig
			}
			return a.initConfig(file, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.name, "name", "", "your display name as the operator (default: $USER)")
	fl.StringVar(&f.identity, "identity", "", "your identity file, created if missing (default: .foreman/NAME.json beside the config)")
	fl.StringVar(&f.url, "url", "ws://127.0.0.1:6667", "the AgentChat server (server.url)")
	fl.StringVar(&f.channel, "channel", "#build", "the room (server.channel)")
	fl.StringVar(&f.components, "components", "", `the build's components, space-separated, each "name" or "name:dep,dep" (what it waits for)`)
	fl.StringVar(&f.spec, "spec", "", "read the components from this owl spec directory (build.spec)")
	fl.StringVar(&f.build, "build", "", "the build's name (default: the spec's product.md title; with --components, the directory's name; else bookshop)")
	fl.BoolVar(&f.force, "force", false, "replace an existing config (identity files are kept)")
	fl.StringVar(&f.repo, "repo", "", "the git repository for host.repo (default: the one the config is in, if any)")
	fl.BoolVar(&f.noRepo, "no-repo", false, "no host.repo, even in a git repository: foreman up then runs no host")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "with --spec, list every dependency bullet and what it was read as")
	return cmd
}

// initPlan is what init writes, worked out before anything is written.
type initPlan struct {
	File, Dir          string // the config, and the directory its paths are relative to
	URL, Channel       string
	Build              string
	Spec               string // build.spec as written in the config, or ""
	Named              bool   // the components are --components's
	Components         []coordinator.Component
	Owl                *config.OwlSpec // how the spec was read, to show
	Operator           string          // the operator's display name
	OperatorID         string
	OperatorKey        string // as typed in a shell here
	ForemanKey         string // as written in the config
	ForemanID          string
	createdF, createdO bool
	// The host's repository, when init offers one: host.repo as written
	// (relative to the config's directory), where it is, the branch work
	// lands on, and whether that branch has a commit yet.
	Repo, RepoDir, Target string
	RepoFound             bool // found around the config, not named by --repo
	TargetMissing         bool
}

func (a *app) initConfig(file string, f initFlags) error {
	if _, err := os.Stat(file); err == nil && !f.force {
		return fmt.Errorf("%s exists: foreman init does not replace a config (--force does; identity files are kept)", file)
	}
	p := initPlan{File: file, Dir: filepath.Dir(file), URL: f.url, Channel: f.channel, Build: f.build, ForemanKey: ".foreman/identity.json"}
	p.Operator = f.name
	if p.Operator == "" {
		p.Operator = displayName(os.Getenv("USER"))
	}
	if !nameRE.MatchString(p.Operator) || p.Operator == "foreman" {
		return fmt.Errorf("--name %q: your display name in the room, 1 to 32 letters, digits, _ or -, and not foreman's", p.Operator)
	}
	if err := p.readBuild(f); err != nil {
		return err
	}
	p.OperatorKey = f.identity
	if p.OperatorKey == "" {
		p.OperatorKey = filepath.Join(p.Dir, ".foreman", p.Operator+".json")
	}
	if err := os.MkdirAll(p.Dir, 0o755); err != nil {
		return err
	}
	if err := p.readRepo(f); err != nil {
		return err
	}
	// The config is checked as foreman will read it before any key is made.
	p.ForemanID, p.OperatorID = "@0000000000000000", "@0000000000000001"
	if err := p.check(); err != nil {
		return err
	}
	if err := p.identities(); err != nil {
		return err
	}
	text, err := p.render()
	if err != nil {
		return err
	}
	if err := os.WriteFile(file, text, 0o644); err != nil {
		return err
	}
	ignore := filepath.Join(p.Dir, ".foreman", ".gitignore")
	if _, err := os.Stat(ignore); errors.Is(err, os.ErrNotExist) {
		// Keys and the journal: never to be committed.
		if err := os.WriteFile(ignore, []byte("*\n"), 0o644); err != nil {
			return err
		}
	}
	p.report(a, f.verbose)
	return nil
}

var (
	notName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)
	nameRE  = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)
)

// check loads the config as rendered, from beside where it will be (its
// paths are relative to it).
func (p *initPlan) check() error {
	text, err := p.render()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(p.Dir, ".foreman-init-*.yaml")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(text)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if _, err := config.Load(tmp.Name(), nil, nil); err != nil {
		var ce *config.Error
		if errors.As(err, &ce) {
			check := "--url, --channel and --build"
			if p.Named {
				check = "--components, --url, --channel and --build"
			}
			return fmt.Errorf("the config init would write is not valid: %s (check %s)", ce, check)
		}
		return err
	}
	return nil
}

// displayName makes a room display name of a login name.
func displayName(user string) string {
	n := strings.Trim(notName.ReplaceAllString(user, "-"), "-")
	if len(n) > 32 {
		n = n[:32]
	}
	if n == "" || n == "foreman" {
		return "operator"
	}
	return n
}

// readBuild takes the components named, or the spec's, or the starter
// build.
func (p *initPlan) readBuild(f initFlags) error {
	spec := f.spec
	if f.components != "" {
		if spec != "" {
			return errors.New("--components and --spec: give one; the spec names the components itself")
		}
		comps, err := parseComponents(f.components)
		if err != nil {
			return fmt.Errorf("--components: %w", err)
		}
		if g := config.Graph(comps); g.Len() == len(comps) {
			if _, cycle := g.Order(); cycle != nil {
				return fmt.Errorf("--components: a dependency cycle: %s; one of them must not wait for the other", g.Format(cycle))
			}
		}
		p.Components, p.Named = comps, true
		if p.Build == "" {
			dir, _ := filepath.Abs(p.Dir)
			p.Build = buildName(filepath.Base(dir))
		}
		return nil
	}
	if spec == "" {
		if p.Build == "" {
			p.Build = "bookshop"
		}
		p.Components = demo.Bookshop()
		return nil
	}
	owl, err := config.ReadOwlSpec(spec)
	if err != nil {
		return fmt.Errorf("--spec: %w", err)
	}
	p.Components, p.Owl = owl.Components, owl
	abs, err := filepath.Abs(spec)
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(p.Dir)
	if err != nil {
		return err
	}
	if p.Spec, err = filepath.Rel(dir, abs); err != nil {
		p.Spec = abs
	}
	if p.Build == "" {
		p.Build = productTitle(spec)
	}
	return nil
}

// productTitle is the spec's name, from product.md's first heading.
func productTitle(spec string) string {
	b, err := os.ReadFile(filepath.Join(spec, "product.md"))
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if t, ok := strings.CutPrefix(strings.TrimSpace(line), "# "); ok {
				if w := strings.TrimSpace(t); protocol.CleanWord(w, protocol.MaxName) == w && w != "" {
					return w
				}
				break
			}
		}
	}
	return "build"
}

// readRepo finds the repository init offers as host.repo: --repo's, or
// the one the config's directory is in, unless --no-repo.
func (p *initPlan) readRepo(f initFlags) error {
	if f.noRepo {
		if f.repo != "" {
			return errors.New("--repo and --no-repo: give one")
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var repo *gitrepo.Repo
	var err error
	if f.repo != "" {
		if repo, err = gitrepo.Open(ctx, f.repo); err != nil {
			return fmt.Errorf("--repo: %w", err)
		}
	} else if repo, err = gitrepo.Find(ctx, p.Dir); err != nil {
		return nil // not in a repository: no host to offer
	}
	p.RepoFound = f.repo == ""
	p.RepoDir = repo.Dir()
	dir, err := filepath.Abs(p.Dir)
	if err != nil {
		return err
	}
	if p.Repo, err = filepath.Rel(dir, repo.Dir()); err != nil {
		p.Repo = repo.Dir()
	}
	if p.Target, err = repo.Head(ctx); err != nil || p.Target == "" {
		p.Target = "main" // HEAD detached, or a bare repository's HEAD unborn
	}
	tip, err := repo.RevParse(ctx, "refs/heads/"+p.Target)
	p.TargetMissing = err != nil || tip == ""
	return nil
}

// identities loads or creates foreman's key and the operator's.
func (p *initPlan) identities() error {
	fpath := filepath.Join(p.Dir, p.ForemanKey)
	fid, created, err := agentchat.LoadOrCreateIdentity(fpath, "foreman")
	if err != nil {
		return fmt.Errorf("foreman's identity %s: %w", fpath, err)
	}
	p.ForemanID, p.createdF = fid.AgentID(), created
	oid, created, err := agentchat.LoadOrCreateIdentity(p.OperatorKey, p.Operator)
	if err != nil {
		return fmt.Errorf("your identity %s: %w", p.OperatorKey, err)
	}
	if oid.AgentID() == p.ForemanID {
		return fmt.Errorf("--identity %s is foreman's own key: the operator needs one of its own", p.OperatorKey)
	}
	p.OperatorID, p.createdO = oid.AgentID(), created
	return nil
}

var configTemplate = template.Must(template.New("config").Parse(`# foreman's configuration, written by foreman init. Paths are relative to
# this file. Every key, with its default, is documented in foreman's
# config.example.yaml; ` + "`foreman validate`" + ` checks this file.

server:
  # The room. ` + "`foreman serve`" + ` runs one here; a stock AgentChat server
  # makes a key it has never seen wait an hour before it may send.
  url: {{.URL}}
  channel: "{{.Channel}}"
  # foreman's own key ({{.ForemanID}}): keep it private.
  identity: {{.ForemanKey}}
  name: foreman

build:
  name: {{.Build}}
{{- if .Spec}}
  # The components and their dependencies, from an owl spec.
  spec: {{.Spec}}
{{- else}}
{{- if .Named}}
  # The components, in the order they are built, and what each waits for.
{{- else}}
  # The starter build of foreman's README: replace it with your own
  # components (foreman init --components "a b:a" writes them), or set spec
  # to an owl spec directory instead.
{{- end}}
  components:
{{- range .Components}}
    - name: {{.Name}}
{{- if .Deps}}
      depends_on: [{{range $i, $d := .Deps}}{{if $i}}, {{end}}{{$d}}{{end}}]
{{- end}}
{{- end}}
{{- end}}

roles:
  # Sender ids, never display names. Operators settle escalations (RESOLVE,
  # RELEASE, ASSIGN, ...): {{.Operator}}, whose key is {{.OperatorKey}}.
  operators: ["{{.OperatorID}}"]
{{- if .Repo}}
  # The host's id goes in ci and merger: foreman up puts it there for each
  # run; list it here to run foreman host beside foreman run instead.
{{- end}}
{{- if .Repo}}

rules:
  # foreman host checks each READY and lands what AUDIT approves.
  ci_gating: on
  merge: external

host:
  # The git repository builders push their branches to, and where approved
  # work lands (on target). foreman init {{if .RepoFound}}found it around this file{{else}}was given it{{end}};
  # foreman init --no-repo leaves the host out.
  repo: {{.Repo}}
  target: {{.Target}}
  # Each check runs in a worktree of what would land, as a program and its
  # arguments (no shell), e.g. ["make test"] or ["go test ./..."]; none:
  # every branch that merges cleanly passes.
  checks: []
{{- end}}

journal:
  # Every input foreman handles, so that a restart resumes the build.
  path: .foreman/journal

http:
  # The board, /metrics and /healthz; ` + "`foreman status`" + ` reads it.
  listen: 127.0.0.1:9090
`))

func (p *initPlan) render() ([]byte, error) {
	var b bytes.Buffer
	if err := configTemplate.Execute(&b, p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// report says what was written and what to run next, with the config
// named only when the commands would not find it by themselves.
func (p *initPlan) report(a *app, verbose bool) {
	out := a.stdout
	fmt.Fprintf(out, "wrote %s: build %s (%d components), room %s at %s\n", p.File, p.Build, len(p.Components), p.Channel, p.URL)
	verb := map[bool]string{true: "created", false: "using"}
	fmt.Fprintf(out, "%s %s: foreman, agent id %s\n", verb[p.createdF], filepath.Join(p.Dir, p.ForemanKey), p.ForemanID)
	fmt.Fprintf(out, "%s %s: you (%s), agent id %s, the operator\n", verb[p.createdO], p.OperatorKey, p.Operator, p.OperatorID)
	if p.Owl != nil {
		// What the spec was read as, for its author to check before a
		// build starts on it.
		fmt.Fprintln(out)
		for _, w := range p.Owl.Warnings {
			fmt.Fprintln(out, "warning:", w)
		}
		printSpecReading(out, p.Spec, p.Owl, verbose, "foreman validate -v lists them")
		printBuildOrder(out, p.Build, p.Components, p.Owl)
	}
	if p.Repo != "" {
		fmt.Fprintf(out, "host.repo: %s (target %s): foreman up checks builders' branches there and lands approved work; --no-repo leaves it out\n", p.RepoDir, p.Target)
		if p.TargetMissing {
			fmt.Fprintf(out, "note: %s has no branch %s yet: make its first commit (git commit --allow-empty -m start) before foreman up\n", p.RepoDir, p.Target)
		}
	}
	if j := filepath.Join(p.Dir, ".foreman", "journal"); pathExists(j) {
		fmt.Fprintf(out, "note: %s holds an earlier build, which foreman run resumes; delete it to start afresh\n", j)
	}
	arg := ""
	if p.File != defaultConfig {
		arg = " " + p.File
	}
	host, hostLine := "", ""
	if p.Repo != "" {
		host = ", the host"
		hostLine = fmt.Sprintf("  # foreman host checks and lands; first list its id (foreman identity%[1]s --identity .foreman/host.json)\n  # in roles.ci and roles.merger\n  foreman host%[1]s\n", arg)
	}
	fmt.Fprintf(out, `
Next, from here:
  foreman up%[1]s
runs the room, foreman%[5]s and the board in one process, and prints how to join.
Or each part in a terminal of its own (the advanced path):
  # a chat room at %[2]s
  foreman serve%[1]s
  # foreman joins %[3]s and coordinates; its board is on http://127.0.0.1:9090
  foreman run%[1]s
%[6]s  # you, the operator, in %[3]s: type STATUS, RESOLVE c, ... or /help
  foreman agent%[1]s --role chat --identity %[4]s
Agents join the same room: foreman agent%[1]s --role builder is a scripted one, and
foreman prompt prints the guide that teaches an LLM agent the protocol.
`, arg, p.URL, p.Channel, p.OperatorKey, host, hostLine)
}

func pathExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// parseComponents reads --components: names separated by spaces (or
// commas between entries), each "name" or "name:dep,dep". The names and the
// graph are checked by the configuration itself afterwards (unknown
// dependencies, cycles, names like verbs), with the same words as a config
// file's errors; here only the form.
func parseComponents(s string) ([]coordinator.Component, error) {
	var out []coordinator.Component
	for _, word := range strings.Fields(s) {
		name, deps, _ := strings.Cut(word, ":")
		if name == "" {
			return nil, fmt.Errorf("%q names no component before its colon", word)
		}
		c := coordinator.Component{Name: name}
		for d := range strings.SplitSeq(deps, ",") {
			if d = strings.TrimSpace(d); d != "" {
				c.Deps = append(c.Deps, d)
			}
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New(`names no component; say them like "lexer parser:lexer cli:parser"`)
	}
	return out, nil
}

// buildName makes a directory's name a build's: letters, digits, - and _,
// else "build".
func buildName(dir string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(dir) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "build"
	}
	return b.String()
}
