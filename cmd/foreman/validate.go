package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/internal/config"
)

func (a *app) validateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "validate [CONFIG]",
		Short: "Check a config file and print the build order",
		Long: `validate loads a configuration (the file given, --config, FOREMAN_CONFIG, or
foreman.yaml here), checks every key and the dependency graph, and prints the
components in a valid build order, after a warning for what would hurt at run
time (no operator, an identity file others can read) and the bullets of an owl
spec taken as notes. On a dependency cycle it prints the cycle and exits 1.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.loadConfig(cmd, configArg(args), nil)
			if err != nil {
				return err
			}
			if err := requireFile(c, "validate"); err != nil {
				return err
			}
			if err := c.RequireBuild(); err != nil {
				return err
			}
			for _, w := range buildWarnings(c) {
				fmt.Fprintln(a.stdout, "warning:", w)
			}
			return a.printBuildOrder(c)
		},
	}
}

func (a *app) printBuildOrder(c *config.Config) error {
	out := a.stdout
	if len(c.Build.Notes) > 0 {
		fmt.Fprintf(out, "build.spec %s: %d dependency bullets taken as notes, not dependencies:\n", c.Build.Spec, len(c.Build.Notes))
	}
	for _, n := range c.Build.Notes {
		fmt.Fprintln(out, "note:", n)
	}
	for _, w := range c.Build.Warnings {
		fmt.Fprintln(out, "warning:", w)
	}
	g := config.Graph(c.Build.Components)
	order, cycle := g.Order()
	if cycle != nil {
		fmt.Fprintf(out, "build %s: dependency cycle: %s\n", c.Build.Name, g.Format(cycle))
		return &exitError{code: 1, silent: true, err: fmt.Errorf("dependency cycle")}
	}
	fmt.Fprintf(out, "build %s: %d components, no cycles\nbuild order:\n", c.Build.Name, g.Len())
	width := 0
	for i := 0; i < g.Len(); i++ {
		width = max(width, len(g.Name(i)))
	}
	for n, i := range order {
		deps := make([]string, 0, len(g.Deps(i)))
		for _, d := range g.Deps(i) {
			deps = append(deps, g.Name(d))
		}
		line := fmt.Sprintf("%3d. %-*s", n+1, width, g.Name(i))
		if len(deps) > 0 {
			line += "  after " + strings.Join(deps, ", ")
		}
		fmt.Fprintln(out, strings.TrimRight(line, " "))
	}
	return nil
}
