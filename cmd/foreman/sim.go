package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/internal/tooling/hostsim"
	"github.com/agentforeman/foreman/internal/tooling/vopr"
)

func (a *app) simCommand() *cobra.Command {
	var seeds, workers int
	var from uint64
	var out string
	var verbose, takeovers, hosts bool
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run the deterministic fault simulator over many seeds",
		Long: `sim runs foreman's whole loop (joining, catching up after restarts, stamps,
gaps, pacing, the node, the engine, the journal) on a virtual clock against a
simulated stock AgentChat room, with faults each seed chooses: kills at any
step, restarts, a damaged or deleted journal, dropped connections, a
restarted room, a second foreman with the same key, a short history, stalls,
clock jumps, and agents and operators that misbehave. After every step it
checks foreman's promises. A seed tells the same story every time.

A failing seed prints the invariant it broke, where, and the command that
runs it again, and writes what foreman's journal held as a transcript that
foreman replay reads (and the room, as everyone saw it) to --out. It exits 1
if any seed failed.

With --host it simulates foreman host instead (internal/tooling/hostsim):
the host's real core and ledger, foreman's engine, builders and an auditor,
on a simulated git repository, with the host killed at any moment (a
landing under way may have moved main, with or without its receipt) or
stopped, the repository locked, commits pushed straight to main and to
branches after their review; after every step it checks that every commit
on main was landed by the host, merges an approved commit, on a tree a run
of the checks passed, each approval once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if seeds < 1 {
				return fmt.Errorf("--seeds: %d is not a number of seeds", seeds)
			}
			if hosts {
				return a.simHosts(from, seeds, verbose)
			}
			if verbose && seeds == 1 {
				return a.simOne(vopr.Options{Seed: from, Takeovers: takeovers}, out)
			}
			began := time.Now()
			sum := vopr.RunManyWith(vopr.Options{Takeovers: takeovers}, from, seeds, workers, func(r vopr.Result) {
				if verbose {
					fmt.Fprintln(a.stdout, simLine(r))
				}
			})
			a.simSummary(sum, from, time.Since(began), workers)
			if len(sum.Violations) == 0 {
				return nil
			}
			for i, v := range sum.Violations {
				if i == 10 {
					fmt.Fprintf(a.stdout, "... and %d more\n", len(sum.Violations)-i)
					break
				}
				a.simFailure(v, out)
			}
			return &exitError{code: 1, silent: true, err: fmt.Errorf("%d of %d seeds broke an invariant", len(sum.Violations), seeds)}
		},
	}
	cmd.Flags().IntVar(&seeds, "seeds", 1000, "how many seeds to run")
	cmd.Flags().Uint64Var(&from, "from", 1, "the first seed")
	cmd.Flags().IntVar(&workers, "workers", 0, "seeds run at once (0: one per CPU)")
	cmd.Flags().StringVar(&out, "out", "sim-failures", "where a failing seed's transcripts go")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "a line per seed; with --seeds 1, every step")
	cmd.Flags().BoolVar(&hosts, "host", false, "simulate foreman host, its landings and their promise, instead of foreman")
	cmd.Flags().BoolVar(&takeovers, "takeovers", false, "every stall is a cluster's takeover: a standby leads behind a fence while foreman is stopped, which wakes deposed")
	return cmd
}

func simLine(r vopr.Result) string {
	end := "held for a human"
	switch {
	case r.Violation != nil:
		end = "VIOLATION " + r.Violation.Invariant
	case r.Limit != "":
		end = "stopped at a limit: " + r.Limit
	case r.Complete:
		end = "COMPLETE"
	}
	return fmt.Sprintf("seed %d: %d steps, %s virtual: %s", r.Seed, r.Steps, r.Virtual.Round(time.Second), end)
}

// simOne runs one seed and shows every step.
func (a *app) simOne(opts vopr.Options, out string) error {
	r, err := a.record(opts, out, func(step int, at time.Duration, what string) {
		fmt.Fprintf(a.stdout, "%7d %14s  %s\n", step, at.Round(time.Millisecond), what)
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, simLine(r))
	if r.Violation == nil {
		return nil
	}
	fmt.Fprintln(a.stdout, r.Violation)
	return &exitError{code: 1, silent: true, err: r.Violation}
}

// record runs a seed again, writing its transcripts to dir; it returns the
// paths it wrote in the result's lines.
func (a *app) record(opts vopr.Options, dir string, trace func(int, time.Duration, string)) (vopr.Result, error) {
	seed := opts.Seed
	opts.Trace = trace
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return vopr.Result{}, err
	}
	hist := filepath.Join(dir, fmt.Sprintf("seed-%d.txt", seed))
	room := filepath.Join(dir, fmt.Sprintf("seed-%d.room.log", seed))
	hf, err := os.Create(hist)
	if err != nil {
		return vopr.Result{}, err
	}
	defer hf.Close()
	rf, err := os.Create(room)
	if err != nil {
		return vopr.Result{}, err
	}
	defer rf.Close()
	r, err := vopr.Record(opts, hf, rf)
	if err != nil {
		return r, err
	}
	fmt.Fprintf(a.stdout, "wrote %s (foreman replay reads it) and %s\n", hist, room)
	return r, nil
}

func (a *app) simFailure(v *vopr.Violation, out string) {
	fmt.Fprintf(a.stdout, "\nFAIL %s\n", v)
	fmt.Fprintf(a.stdout, "  run it again: %s\n", v.Replay())
	if _, err := a.record(vopr.Options{Seed: v.Seed, Takeovers: v.Takeovers}, out, nil); err != nil {
		fmt.Fprintf(a.stdout, "  could not write its transcripts: %v\n", err)
	}
}

func (a *app) simSummary(s vopr.Summary, from uint64, took time.Duration, workers int) {
	w := a.stdout
	fmt.Fprintf(w, "seeds %d to %d: %d runs, %d steps, %s of virtual time, in %s\n",
		from, from+uint64(s.Seeds)-1, s.Seeds, s.Steps, s.Virtual.Round(time.Hour), took.Round(time.Second))
	fmt.Fprintf(w, "builds: %d COMPLETE, %d ended held for a human, %d stopped at a documented limit\n",
		s.Complete, s.Held, s.Limits)
	printFaults(w, "faults injected", s.Faults, true)
	printFaults(w, "seen happen", s.Faults, false)
	fmt.Fprintf(w, "invariant violations: %d\n", len(s.Violations))
}

func printFaults(w io.Writer, title string, f vopr.Faults, injected bool) {
	fmt.Fprintf(w, "%s:\n", title)
	f.Each(func(name string, n int, inj bool) {
		if inj == injected {
			fmt.Fprintf(w, "  %-36s %d\n", name, n)
		}
	})
}

// simHosts runs foreman host's simulator over seeds (with -v and one seed,
// every step).
func (a *app) simHosts(from uint64, seeds int, verbose bool) error {
	if verbose && seeds == 1 {
		r := hostsim.Run(hostsim.Options{Seed: from, Trace: func(at time.Duration, what string) {
			fmt.Fprintf(a.stdout, "%14s  %s\n", at.Round(time.Millisecond), what)
		}})
		if r.Violation != nil {
			fmt.Fprintln(a.stdout, r.Violation)
			return &exitError{code: 1, silent: true, err: r.Violation}
		}
		fmt.Fprintf(a.stdout, "seed %d: %d steps, %s virtual, %d landings, complete %v\n", r.Seed, r.Steps, r.Virtual.Round(time.Second), r.Landed, r.Complete)
		return nil
	}
	began := time.Now()
	sum := hostsim.RunMany(from, seeds, func(r hostsim.Result) {
		if verbose {
			fmt.Fprintf(a.stdout, "seed %d: %d steps, %s virtual, %d landings, complete %v\n", r.Seed, r.Steps, r.Virtual.Round(time.Second), r.Landed, r.Complete)
		}
	})
	fmt.Fprintf(a.stdout, "foreman host, seeds %d to %d: %d runs, %d steps, in %s\n", from, from+uint64(sum.Seeds)-1, sum.Seeds, sum.Steps, time.Since(began).Round(time.Second))
	fmt.Fprintf(a.stdout, "builds: %d COMPLETE; %d commits landed\n", sum.Complete, sum.Landed)
	fmt.Fprintln(a.stdout, "faults injected:")
	for _, f := range slices.Sorted(maps.Keys(sum.Faults)) {
		fmt.Fprintf(a.stdout, "  %-34s %d\n", f, sum.Faults[f])
	}
	fmt.Fprintf(a.stdout, "invariant violations: %d\n", len(sum.Violations))
	for i, v := range sum.Violations {
		if i == 10 {
			fmt.Fprintf(a.stdout, "... and %d more\n", len(sum.Violations)-i)
			break
		}
		fmt.Fprintf(a.stdout, "\nFAIL %s\n  run it again: %s\n", v, v.Replay())
	}
	if len(sum.Violations) > 0 {
		return &exitError{code: 1, silent: true, err: fmt.Errorf("%d of %d seeds broke the landing invariant", len(sum.Violations), seeds)}
	}
	return nil
}
