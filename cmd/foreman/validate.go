package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host/live"
)

func (a *app) validateCommand() *cobra.Command {
	var verbose bool
	cmd := &cobra.Command{
		Use:   "validate [CONFIG]",
		Short: "Check a config file and print the build order",
		Long: `validate loads a configuration (the file given, --config, FOREMAN_CONFIG, or
foreman.yaml here), checks every key and the dependency graph, and prints the
components in a valid build order, one line each with what it depends on,
after a warning for what would hurt at run time (no operator, an identity file
others can read). For an owl spec (build.spec) it says how the "depends on:"
bullets were read: each dependency read from prose shows the words that named
it, the bullets that name no component are counted as notes, and -v lists
every bullet with its file and line and what it was read as. On a dependency
cycle it prints the cycle and exits 1.

For a pool's process config (cluster.builds) it checks every build config in
that directory the same way and prints one line per build (-v: each build's
order).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.loadConfig(cmd, configArg(args), nil)
			if err != nil {
				return err
			}
			if err := requireFile(c, "validate"); err != nil {
				return err
			}
			if c.Cluster.Builds != "" {
				return a.validatePool(c, verbose)
			}
			if err := c.RequireBuild(); err != nil {
				return err
			}
			if c.Host.Repo != "" && !c.Host.Unconfined {
				if err := live.SandboxConfig(c, "").CheckPaths(); err != nil {
					return err
				}
			}
			if c.Host.Repo != "" {
				// As foreman host will run them; the repository's own
				// programs only where it opens (foreman host says why not).
				repo, err := gitrepo.Open(cmd.Context(), c.Host.Repo)
				if err != nil {
					repo = nil
				}
				if err := live.CheckPrograms(cmd.Context(), c, repo, !c.Cluster.Enabled()); err != nil {
					return err
				}
			}
			for _, w := range buildWarnings(c) {
				fmt.Fprintln(a.stdout, "warning:", w)
			}
			for _, w := range c.Build.Warnings {
				fmt.Fprintln(a.stdout, "warning:", w)
			}
			if c.Build.Owl != nil {
				printSpecReading(a.stdout, c.Build.Spec, c.Build.Owl, verbose, "-v lists them")
			}
			if printBuildOrder(a.stdout, c.Build.Name, c.Build.Components, c.Build.Owl) {
				return &exitError{code: 1, silent: true, err: fmt.Errorf("dependency cycle")}
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "list every dependency bullet of an owl spec and what it was read as")
	return cmd
}

// validatePool checks a pool's builds (cluster.builds) as validate checks
// one config: one line each, or with verbose each build's order.
func (a *app) validatePool(c *config.Config, verbose bool) error {
	builds, err := c.PoolBuilds()
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "cluster.builds %s: %s\n", c.Cluster.Builds, agree(len(builds), "build", "builds"))
	for _, w := range poolWarnings(builds, func(b *config.Config) []string { return append(buildWarnings(b), b.Build.Warnings...) }) {
		fmt.Fprintln(a.stdout, "warning:", w)
	}
	cycles := 0
	for _, b := range builds {
		if verbose {
			fmt.Fprintf(a.stdout, "%s:\n", b.File)
			if b.Build.Owl != nil {
				printSpecReading(a.stdout, b.Build.Spec, b.Build.Owl, true, "")
			}
			if printBuildOrder(a.stdout, b.Build.Name, b.Build.Components, b.Build.Owl) {
				cycles++
			}
			continue
		}
		g := config.Graph(b.Build.Components)
		if _, cycle := g.Order(); cycle != nil {
			cycles++
			fmt.Fprintf(a.stdout, "%s: build %s: dependency cycle: %s\n", b.File, b.Build.Name, g.Format(cycle))
			continue
		}
		fmt.Fprintf(a.stdout, "%s: build %s: %s, no cycles\n", b.File, b.Build.Name, agree(g.Len(), "component", "components"))
	}
	if cycles > 0 {
		return &exitError{code: 1, silent: true, err: fmt.Errorf("dependency cycle")}
	}
	return nil
}

// printSpecReading says in one line how an owl spec's dependency bullets
// were read, and with verbose lists each of them; more says how to.
func printSpecReading(out io.Writer, dir string, spec *config.OwlSpec, verbose bool, more string) {
	deps, cut := 0, 0
	for _, c := range spec.Components {
		deps += len(c.Deps)
	}
	for _, b := range spec.Bullets {
		if len(b.Deps) > 0 && b.Deps[0].Cut {
			cut++
		}
	}
	named := spec.Count(config.Prose) + spec.Count(config.Literal)
	line := fmt.Sprintf("build.spec %s: %d dependency bullets: %s components (%d dependencies), %s none, %s",
		dir, len(spec.Bullets), agree(named, "names", "name"), deps, agree(spec.Count(config.None), "says", "say"),
		agree(spec.Count(config.Note), "is a note", "are notes"))
	if cut > 0 {
		line += fmt.Sprintf(", %d left out to break a cycle", cut)
	}
	if !verbose && len(spec.Bullets) > 0 {
		line += " (" + more + ")"
	}
	fmt.Fprintln(out, line)
	if !verbose {
		return
	}
	for _, b := range spec.Bullets {
		fmt.Fprintf(out, "  %s: %s: %q -> %s\n", b.At, b.Component, b.Text, bulletReading(b))
	}
}

// agree is "1 says" or "2 say".
func agree(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// bulletReading is what a bullet was read as, for validate -v.
func bulletReading(b config.Bullet) string {
	switch b.Reading {
	case config.None:
		return "no dependency"
	case config.Note:
		return "note (" + b.Why + ")"
	}
	names := make([]string, len(b.Deps))
	for i, d := range b.Deps {
		names[i] = d.Name
		if d.Cut {
			names[i] += " (left out: a cycle)"
		}
	}
	s := strings.Join(names, ", ")
	if b.Reading == config.Literal {
		s += " (literal)"
	}
	return s
}

// printBuildOrder prints the components in a build order, one line each
// with what it depends on and, for a dependency read from an owl spec's
// prose, the words that named it when they say more than its name. On a
// cycle it prints the cycle instead and reports true.
func printBuildOrder(out io.Writer, build string, comps []coordinator.Component, spec *config.OwlSpec) bool {
	g := config.Graph(comps)
	order, cycle := g.Order()
	if cycle != nil {
		fmt.Fprintf(out, "build %s: dependency cycle: %s\n", build, g.Format(cycle))
		return true
	}
	fmt.Fprintf(out, "build %s: %d components, no cycles; build order:\n", build, g.Len())
	width := 0
	for i := 0; i < g.Len(); i++ {
		width = max(width, len(g.Name(i)))
	}
	for n, i := range order {
		name := g.Name(i)
		var deps []string
		if spec != nil {
			for _, d := range spec.Read(name) {
				deps = append(deps, d.Name+quoted(d.Words))
			}
		} else {
			for _, d := range g.Deps(i) {
				deps = append(deps, g.Name(d))
			}
		}
		line := fmt.Sprintf("%3d. %-*s", n+1, width, name)
		if len(deps) > 0 {
			line += "  after " + strings.Join(deps, ", ")
		}
		fmt.Fprintln(out, strings.TrimRight(line, " "))
	}
	return false
}

// quoted is ` ("w1", "w2")`, or nothing for no words.
func quoted(words []string) string {
	if len(words) == 0 {
		return ""
	}
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = fmt.Sprintf("%q", w)
	}
	return " (" + strings.Join(q, ", ") + ")"
}
