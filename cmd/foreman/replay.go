package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/transcript"
)

func (a *app) replayCommand() *cobra.Command {
	var update, verbose bool
	cmd := &cobra.Command{
		Use:   "replay FILE...",
		Short: "Replay transcripts through the engine on a virtual clock",
		Long: `replay feeds each transcript's heard lines to the coordinator engine at their
times, firing timers on a virtual clock, and checks that the engine says
exactly the transcript's coordinator lines. It prints PASS per file, or a
diff (- expected but never said, + said but not expected), and exits 1 if
any file fails.

--update rewrites each file's coordinator lines from what the engine said.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			failed := 0
			for _, file := range files {
				ok, err := a.replayFile(file, update, verbose)
				if err != nil {
					fmt.Fprintln(a.stdout, "ERROR", err)
					failed++
					continue
				}
				if !ok {
					failed++
				}
			}
			if failed > 0 {
				return &exitError{code: 1, err: fmt.Errorf("%d of %d transcripts failed", failed, len(files))}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&update, "update", false, "rewrite each file's coordinator lines from what the engine said")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "show every line heard and said")
	return cmd
}

func (a *app) replayFile(file string, update, verbose bool) (bool, error) {
	f, err := os.Open(file)
	if err != nil {
		return false, err
	}
	t, err := transcript.Parse(file, f)
	f.Close()
	if err != nil {
		return false, err
	}
	res, err := transcript.Replay(t)
	if err != nil {
		return false, err
	}
	if verbose {
		fmt.Fprintf(a.stdout, "== %s\n", file)
		res.WriteTimeline(a.stdout)
	}
	if update {
		if err := os.WriteFile(file, res.Update(), 0o644); err != nil {
			return false, err
		}
		fmt.Fprintf(a.stdout, "UPDATED %s (%d lines said)\n", file, len(res.Said))
		return true, nil
	}
	if res.Passed() {
		fmt.Fprintf(a.stdout, "PASS %s (%d heard, %d said)\n", file, len(t.Lines)-countSaid(t), len(res.Said))
		return true, nil
	}
	fmt.Fprintf(a.stdout, "FAIL %s: %d differences\n", file, res.Failures)
	res.WriteDiff(a.stdout)
	return false, nil
}

func countSaid(t *transcript.Transcript) int {
	n := 0
	for _, l := range t.Lines {
		if l.Said {
			n++
		}
	}
	return n
}
