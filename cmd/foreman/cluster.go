package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/internal/bot"
	"github.com/agentforeman/foreman/internal/cluster"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/pool"
	"github.com/agentforeman/foreman/internal/web"
)

// runInCluster is foreman run with cluster.nats set: this process joins the
// pool and leads the builds whose leases it holds (its config's build, or
// every build in cluster.builds: configs, as runBuilds read them), standing
// by for the rest. One build alone exits on a refusal, as foreman run
// without a cluster does; a pool leaves a refused build be.
func (a *app) runInCluster(ctx context.Context, cmd *cobra.Command, c *config.Config, configs []*config.Config, file string,
	log zerolog.Logger, reload <-chan struct{}, newBuild bool) error {
	// On SIGHUP a build reloads its own file; the config's own build, as
	// run loaded it (with its flags and variables).
	builds := []pool.Build{{Config: c, Reload: func() (*config.Config, error) { return a.loadConfig(cmd, file, runFlagKeys) }}}
	if c.Cluster.Builds != "" {
		builds = make([]pool.Build, len(configs))
		for i, bc := range configs {
			builds[i] = pool.Build{Config: bc, Reload: func() (*config.Config, error) { return config.Load(bc.File, nil, nil) }}
		}
	}
	metrics := cluster.NewMetrics()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	copts := cluster.FromConfig(c.Cluster, cluster.RoleForeman, log.With().Str("part", "cluster").Logger())
	copts.Metrics = metrics
	cl, err := cluster.Connect(cctx, copts)
	if err != nil {
		var refused *cluster.RefusedError
		if errors.As(err, &refused) {
			return err
		}
		return fmt.Errorf("cluster.nats: %w", err)
	}
	defer cl.Close()
	popts := pool.Options{Cluster: cl, Builds: builds, Capacity: c.Cluster.Capacity, Logger: log,
		NewBuild: newBuild, Fatal: len(builds) == 1, Reload: reload}
	var p *pool.Pool
	if c.HTTP != "" {
		board, url, stopBoard, err := web.Start(c.HTTP, web.Options{Logger: log.With().Str("part", "http").Logger(),
			Cluster: func() []pool.Lead { return p.Status() }, Collectors: metrics.Collectors()})
		if err != nil {
			return fmt.Errorf("http.listen: %w", err)
		}
		defer stopBoard()
		if len(builds) == 1 {
			// One build: the board is that build's while this process
			// leads it, and says who leads it otherwise.
			popts.Bot = func(_ string, o *bot.Options) {
				o.Observe, o.Handled, o.Named = board.Observe, board.Handled, board.Named
			}
			popts.Led = func(_ string, b *bot.Bot) {
				if b == nil {
					board.Attach(nil)
					return
				}
				board.Attach(b)
			}
		}
		log.Info().Str("url", url).Msg("serving the board, /api/view, /api/cluster, /metrics and /healthz")
	}
	if p, err = pool.New(popts); err != nil {
		return err
	}
	log.Info().Str("nats", c.Cluster.String()).Str("id", cl.ID()).Msg("joined the cluster")
	return p.Run(ctx)
}

func (a *app) clusterCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "The builds kept in NATS JetStream: who leads which, and the lease bucket",
	}
	cmd.AddCommand(a.clusterStatusCommand(), a.clusterInitCommand())
	return cmd
}

// clusterConnect joins the cluster as role: a reader for status, which
// makes nothing; foreman, then host, for init.
func (a *app) clusterConnect(cmd *cobra.Command, args []string, role cluster.Role) (*cluster.Cluster, *config.Config, error) {
	c, err := a.loadConfig(cmd, configArg(args), map[string]string{"nats": "cluster.nats"})
	if err != nil {
		return nil, nil, err
	}
	if !c.Cluster.Enabled() {
		return nil, nil, errors.New("cluster.nats: not set: this foreman runs alone (set it in the config, FOREMAN_CLUSTER_NATS or --nats)")
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
	defer cancel()
	opts := cluster.FromConfig(c.Cluster, role, zerolog.Nop())
	opts.ID, opts.Init = "status-"+c.Cluster.ID, role != cluster.RoleReader
	cl, err := cluster.Connect(ctx, opts)
	if err != nil {
		var refused *cluster.RefusedError
		if errors.As(err, &refused) {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("cluster.nats: %w", err)
	}
	return cl, c, nil
}

func (a *app) clusterStatusCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status [CONFIG]",
		Short: "Every build in the cluster: its leader, epoch, last renewal and log; its hosts",
		Long: `status lists every build the cluster keeps: the process that leads it (or
"none" when its lease was released or has lapsed), the lease's epoch (one more
at every takeover), how long ago the lease was renewed by this machine's clock
reading the holder's, the entries in its log since the last snapshot, and
lag: how many of the log's operations the slowest of JetStream's replicas has
yet to apply (0 with one replica). Then the builds' hosts (foreman host with
cluster.nats): the one leading each build, its lease's epoch and renewal,
the records in its ledger, and the host processes standing by for it. Then
the check workers (foreman worker): each one's labels, the jobs in its hands
and for how long, the results it stored, those it dropped because another
worker's was stored first, the jobs it could not do; the hosts that give them
jobs, with the results they took and refused; and the jobs waiting, by the
labels they ask for. It reads cluster.nats from the config, or --nats, and
only reads: its NATS user needs no more than the reader's permissions
(docs/NATS.md).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, c, err := a.clusterConnect(cmd, args, cluster.RoleReader)
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			st, err := cl.Status(ctx)
			if err != nil {
				return err
			}
			hosts, err := cl.Hosts(ctx)
			if err != nil {
				return err
			}
			workers, givers, backlog, err := workersStatus(ctx, c)
			if err != nil {
				return fmt.Errorf("the check workers: %w", err)
			}
			writeClusterStatus(a.stdout, st, time.Now())
			writeHostStatus(a.stdout, hosts, time.Now())
			writeWorkersStatus(a.stdout, workers, givers, backlog, c.Cluster.Lease, time.Now())
			return nil
		},
	}
	cmd.Flags().String("nats", "", "NATS URL (cluster.nats)")
	return cmd
}

func (a *app) clusterInitCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "init [CONFIG]",
		Short: "Make the cluster's buckets, the lease bucket again after it was deleted by hand",
		Long: `init makes the buckets foreman keeps in JetStream. foreman run makes them on a
new cluster by itself; it refuses to when builds' logs exist but the lease
bucket does not (it was deleted by hand), since it cannot know who leads what.
Stop every foreman of the cluster first, then run init: the next leaders take
the builds over with epochs past every fence in their logs. The hosts' lease
bucket likewise (stop every foreman host first). Its NATS user needs the
permissions of foreman and of the host (docs/NATS.md).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, c, err := a.clusterConnect(cmd, args, cluster.RoleForeman)
			if err != nil {
				return err
			}
			cl.Close()
			if cl, _, err = a.clusterConnect(cmd, args, cluster.RoleHost); err != nil {
				return err
			}
			cl.Close()
			fmt.Fprintf(a.stdout, "the buckets of the cluster at %s are ready\n", c.Cluster.NATS)
			return nil
		},
	}
	cmd.Flags().String("nats", "", "NATS URL (cluster.nats)")
	return cmd
}

func writeClusterStatus(w io.Writer, st []cluster.BuildStatus, now time.Time) {
	if len(st) == 0 {
		fmt.Fprintln(w, "no builds in the cluster yet")
		return
	}
	sort.Slice(st, func(i, j int) bool { return st[i].Build < st[j].Build })
	var buf strings.Builder
	defer func() {
		for _, l := range strings.SplitAfter(buf.String(), "\n") {
			if l != "" {
				fmt.Fprintln(w, strings.TrimRight(l, " \n"))
			}
		}
	}()
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BUILD\tLEADER\tEPOCH\tRENEWED\tLOG\tLAG\tNOTE")
	for _, b := range st {
		leader, renewed := b.Leader, "-"
		if leader == "" {
			leader = "none"
		}
		if !b.Renewed.IsZero() {
			renewed = now.Sub(b.Renewed).Round(10*time.Millisecond).String() + " ago"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%d\t%s\n", b.Build, leader, b.Epoch, renewed, b.Entries, b.Lag, strings.Join(b.Notes, "; "))
	}
	tw.Flush()
}

// writeHostStatus lists the builds' hosts, after the builds; nothing when
// no build has one in the cluster.
func writeHostStatus(w io.Writer, hs []cluster.HostStatus, now time.Time) {
	if len(hs) == 0 {
		return
	}
	var buf strings.Builder
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST OF\tLEADER\tEPOCH\tRENEWED\tLEDGER\tSTANDBY\tNOTE")
	for _, h := range hs {
		leader, renewed, standby := h.Leader, "-", "none"
		if leader == "" {
			leader = "none"
		}
		if !h.Renewed.IsZero() {
			renewed = now.Sub(h.Renewed).Round(10*time.Millisecond).String() + " ago"
		}
		if len(h.Standbys) > 0 {
			standby = strings.Join(h.Standbys, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\t%s\n", h.Build, leader, h.Epoch, renewed, h.Records, standby, strings.Join(h.Notes, "; "))
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, l := range strings.SplitAfter(buf.String(), "\n") {
		if l != "" {
			fmt.Fprintln(w, strings.TrimRight(l, " \n"))
		}
	}
}
