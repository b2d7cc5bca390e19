package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/internal/cluster"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/workq"
)

// workersStatus reads the cluster's check workers, the hosts that give
// them jobs, and the queue between them; nothing when no host has made
// the queue.
func workersStatus(ctx context.Context, c *config.Config) ([]workq.WorkerStatus, []workq.HostStatus, []workq.Backlog, error) {
	opts := cluster.FromConfig(c.Cluster, cluster.RoleReader, zerolog.Nop())
	opts.ID = "status-" + opts.ID
	nc, err := cluster.Dial(opts)
	if err != nil {
		return nil, nil, nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, nil, nil, err
	}
	q, err := workq.Open(ctx, js)
	if errors.Is(err, workq.ErrNotReady) {
		return nil, nil, nil, nil
	}
	if err != nil {
		return nil, nil, nil, err
	}
	return q.Status(ctx)
}

// writeWorkersStatus prints the workers, the hosts and the queue: who
// has which job in hand, since when, and what waits for whom. Last seen
// is NATS's clock (when it stored what each said) read by this machine's:
// a difference of clocks shows there, and decides nothing.
func writeWorkersStatus(w io.Writer, workers []workq.WorkerStatus, hosts []workq.HostStatus, backlog []workq.Backlog, lease time.Duration, now time.Time) {
	if len(workers) == 0 && len(hosts) == 0 && len(backlog) == 0 {
		return
	}
	rows := [][]string{{"WORKER", "LABELS", "SANDBOX", "JOBS IN HAND", "DONE", "DUPLICATES", "INFRA", "REFUSED", "LAST SEEN", "NOTE"}}
	for _, s := range workers {
		var jobs []string
		for _, j := range s.Jobs {
			jobs = append(jobs, fmt.Sprintf("%s %s run %d (%s)", j.Build, j.Component, j.Run, ms(j.ForMS)))
		}
		note := ""
		if now.Sub(s.Seen) > 3*lease {
			note = "not seen for 3 leases: stopped, or cut off from NATS"
		}
		rows = append(rows, []string{s.ID, orDash(strings.Join(s.Labels, ", ")), s.Sandbox, orDash(strings.Join(jobs, ", ")),
			fmt.Sprint(s.Done), fmt.Sprint(s.Duplicates), fmt.Sprint(s.Infra), fmt.Sprint(s.Refused), ago(now, s.Seen), note})
	}
	if len(workers) == 0 {
		rows = append(rows, []string{"none yet: start foreman worker"})
	}
	table(w, rows)
	rows = [][]string{{"HOST", "BUILD", "IN FLIGHT", "MAX", "RESULTS", "REFUSED", "RETRIED", "SERVES", "LAST SEEN"}}
	for _, h := range hosts {
		inFlight := fmt.Sprint(len(h.InFlight))
		if h.Unassigned > 0 {
			inFlight += fmt.Sprintf(" (+%d waiting for a worker)", h.Unassigned)
		}
		rows = append(rows, []string{h.Name + " " + h.Host, h.Build, inFlight, fmt.Sprint(h.MaxParallel),
			fmt.Sprint(h.Results), fmt.Sprint(h.Refused), fmt.Sprint(h.Retried), h.Serve, ago(now, h.Seen)})
	}
	table(w, rows)
	rows = [][]string{{"JOBS GIVEN TO", "QUEUED", "NOTE"}}
	for _, b := range backlog {
		note := ""
		if b.Queued > 0 && !anyIs(workers, b.Worker) {
			note = "not there: its host gives them to another"
		}
		rows = append(rows, []string{b.Worker, fmt.Sprint(b.Queued), note})
	}
	table(w, rows)
}

// table prints rows in aligned columns, after a blank line.
func table(w io.Writer, rows [][]string) {
	var buf strings.Builder
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, l := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
		fmt.Fprintln(w, strings.TrimRight(l, " "))
	}
}

func anyIs(workers []workq.WorkerStatus, id string) bool {
	for _, s := range workers {
		if s.ID == id {
			return true
		}
	}
	return false
}

func ms(n int64) string {
	return (time.Duration(n) * time.Millisecond).Round(100 * time.Millisecond).String()
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return now.Sub(t).Round(10*time.Millisecond).String() + " ago"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
