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
		Long: `validate loads a configuration (the file given, or --config), checks every key
and the dependency graph, and prints the components in a valid build order.
On a dependency cycle it prints the cycle and exits 1.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := ""
			if len(args) == 1 {
				file = args[0]
			}
			c, err := a.loadConfig(cmd, file, nil)
			if err != nil {
				return err
			}
			if err := c.RequireBuild(); err != nil {
				return err
			}
			return a.printBuildOrder(c)
		},
	}
}

func (a *app) printBuildOrder(c *config.Config) error {
	out := a.stdout
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
