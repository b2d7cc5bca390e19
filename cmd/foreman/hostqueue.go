package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"time"

	"github.com/agentforeman/foreman/internal/host/live"
)

// writeHostQueue prints foreman host's queue under the board, when a host
// with this configuration has written one (host.logs/queue.json): what
// runs, what waits, the train, flaky checks, the last verdicts, and each
// component it landed with where its receipt is.
func writeHostQueue(w io.Writer, logs string, now time.Time) {
	path := live.QueueFile(logs)
	q, err := live.ReadQueue(path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		fmt.Fprintf(w, "\nCI queue: cannot read %s: %v\n", path, err)
		return
	}
	fmt.Fprintf(w, "\nCI queue (foreman host, target %s, max_parallel %d, as of %s ago):\n",
		q.Target, q.MaxParallel, now.Sub(q.At).Round(time.Second))
	if len(q.Running)+len(q.Waiting)+len(q.Train) == 0 {
		fmt.Fprintln(w, "  empty")
	}
	for _, j := range q.Running {
		fmt.Fprintf(w, "  running  %-5s %-16s %s for %s\n", j.Kind, j.Component, j.Ref, q.At.Sub(j.Started).Round(time.Second))
	}
	for i, j := range q.Waiting {
		line := fmt.Sprintf("  waiting  %-5s %-16s %s (%d of %d)", j.Kind, j.Component, j.Ref, i+1, len(q.Waiting))
		switch {
		case j.Why != "" && !j.NotBefore.IsZero():
			line += ", retried: " + j.Why
		case j.Why != "":
			line += ", " + j.Why // waiting for more to be checked with (host.batch.min)
		}
		fmt.Fprintln(w, line)
	}
	for i, c := range q.Train {
		line := fmt.Sprintf("  train %d  %-8s %-16s on %s, lands in about %s", i+1, c.State, c.Component, c.On, max(c.ETA.Sub(q.At), 0).Round(time.Second))
		if c.Why != "" {
			line += "; " + c.Why
		}
		fmt.Fprintln(w, line)
	}
	if len(q.Flaky) > 0 {
		cmds := make([]string, 0, len(q.Flaky))
		for c := range q.Flaky {
			cmds = append(cmds, c)
		}
		sort.Strings(cmds)
		line := "  flaky checks (failed, then passed on the same tree):"
		for _, c := range cmds {
			line += fmt.Sprintf(" %s %d", c, q.Flaky[c])
		}
		fmt.Fprintln(w, line)
	}
	if q.CheckRuns > 0 {
		line := fmt.Sprintf("  checks   %d runs in this host's life", q.CheckRuns)
		if q.LandedN > 0 {
			line += fmt.Sprintf(", %d components landed: %.2f runs per landing", q.LandedN, float64(q.CheckRuns)/float64(q.LandedN))
		}
		fmt.Fprintln(w, line)
	}
	for _, c := range q.Commands {
		state := "blamed when it fails"
		if c.Flaky {
			state = "flaky: a failure is checked again before anyone is blamed"
		}
		fmt.Fprintf(w, "  check    %-16s failed %d, passed again on the same tree %d: %s\n", c.Command, c.Failed, c.PassedAgain, state)
	}
	for _, l := range q.Landed {
		line := fmt.Sprintf("  merged   %-16s at %s", l.Component, l.Commit[:min(12, len(l.Commit))])
		if l.Receipt {
			line += "  receipt: git notes --ref foreman show " + l.Commit[:min(12, len(l.Commit))]
		} else {
			line += "  no receipt of this host's (found on the target already)"
		}
		fmt.Fprintln(w, line)
	}
	recent := q.Recent
	if len(recent) > 5 {
		recent = recent[len(recent)-5:]
	}
	for i := len(recent) - 1; i >= 0; i-- {
		v := recent[i]
		line := fmt.Sprintf("  %-8s %-5s %-16s", v.Result, v.Kind, v.Component)
		if v.Commit != "" {
			line += " " + v.Commit[:min(12, len(v.Commit))]
		}
		if v.Line != "" {
			line += " " + v.Line
		}
		if v.Log != "" {
			line += " log=" + v.Log
		}
		fmt.Fprintln(w, line)
	}
}
