package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/coordinator"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/gitrepo"
	"github.com/agentforeman/foreman/internal/host"
	"github.com/agentforeman/foreman/internal/host/gitjob"
	"github.com/agentforeman/foreman/internal/host/ledger"
	"github.com/agentforeman/foreman/internal/host/receipt"
	"github.com/agentforeman/foreman/internal/host/sandbox"
)

// Setup is a host made ready from a configuration: everything checked,
// nothing joined yet.
type Setup struct {
	Options  Options
	Identity *agentchat.Identity
	Repo     *gitrepo.Repo
	Ledger   *ledger.Ledger
	Warnings []string
	// Confinement says how checks run confined, logged when the host
	// starts (not before: a refusal after Prepare is one line).
	Confinement []string
	lock        *os.File // the repository's host lock (lock.go)
	workers     *workers // with cluster.nats: the workers run the checks

	// In a cluster (standby.go) the lock and the ledger are taken only
	// while this process leads the build, and so is every landing.
	runner  *gitjob.Runner
	leading atomic.Pointer[func() bool]
}

// Close releases the ledger and the repository, and leaves NATS.
func (s *Setup) Close() error {
	err := s.workers.Close()
	if s.Ledger != nil {
		err = s.Ledger.Close()
	}
	if s.lock != nil {
		err = errors.Join(err, s.lock.Close())
	}
	return err
}

// Prepare checks a configuration for foreman host and opens what it needs:
// its key, the repository, the ledger. Every error is one line that names
// the key to fix.
func Prepare(ctx context.Context, c *config.Config, log zerolog.Logger) (*Setup, error) {
	if err := c.RequireHost(); err != nil {
		return nil, err
	}
	id, _, err := agentchat.LoadOrCreateIdentity(c.Host.Identity, c.Host.Name)
	if err != nil {
		return nil, fmt.Errorf("host.identity: %s: %w", c.Host.Identity, err)
	}
	self := id.AgentID()
	coord, err := coordinatorID(c)
	if err != nil {
		return nil, err
	}
	warnings, err := Roles(c, self)
	if err != nil {
		return nil, err
	}
	repo, err := gitrepo.Open(ctx, c.Host.Repo)
	if err != nil {
		return nil, fmt.Errorf("host.repo: %w", err)
	}
	// In a cluster another process leads the build now, perhaps on this
	// machine: the lock, the pruning and the ledger wait until this one
	// leads it (standby.go).
	clustered := c.Cluster.Enabled()
	var lock *os.File
	if !clustered {
		if lock, err = lockRepo(repo); err != nil { // before anything is pruned: another host may be working there
			return nil, err
		}
	}
	ready := false
	defer func() {
		if !ready && lock != nil {
			lock.Close()
		}
	}()
	if tip, err := repo.RevParse(ctx, "refs/heads/"+c.Host.Target); err != nil || tip == "" {
		return nil, noTarget(ctx, repo, c.Host.Target)
	}
	// A check that cannot start would be every builder's failure, or every
	// component's hold: said now, once, with what to do.
	if err := CheckPrograms(ctx, c, repo, !clustered); err != nil {
		return nil, err
	}
	if !repo.Bare() {
		warnings = append(warnings, fmt.Sprintf("host.repo: %s has a work tree; a bare repository is best (a checkout of %s there must be clean for a landing, and follows it)", repo.Dir(), c.Host.Target))
	}
	var box *sandbox.Sandbox
	var confinement []string
	var pool *workers
	var checker gitjob.Checker
	if clustered {
		// The workers run the checks, in their sandbox: this machine
		// confines none, and need not be able to. They get jobs only
		// while this process leads the build (standby.go).
		if pool, err = prepareWorkers(ctx, c, repo, self, log); err != nil {
			return nil, err
		}
		defer func() {
			if !ready {
				pool.Close()
			}
		}()
		confinement = pool.describe(c)
		checker = pool.remote
		if c.Host.Unconfined {
			warnings = append(warnings, "host.sandbox is off: the workers may run the builders' code unconfined (a worker with host.sandbox on confines it anyway)")
		}
	} else {
		var said []string
		if box, said, err = Sandbox(c, repo.GitDir()); err != nil {
			return nil, err
		}
		warnings = append(warnings, said...)
		if box != nil {
			confinement = box.Describe()
		}
		for i, l := range c.Host.CheckLabels {
			if len(l) > 0 {
				warnings = append(warnings, fmt.Sprintf("host.checks[%d] asks for labels %s, which only workers have (cluster.nats): this host runs it itself", i, strings.Join(l, ", ")))
			}
		}
	}
	timeout := c.Rules.CITimeout
	setup := &Setup{Identity: id, Repo: repo, Warnings: warnings, Confinement: confinement, lock: lock, workers: pool}
	landing := mayLand(c, self)
	if clustered {
		landing = setup.mayLandLeading(landing)
	}
	runner, err := gitjob.New(gitjob.Options{
		Repo: repo, Target: c.Host.Target, Checks: c.Host.Checks, AutoRebase: c.Host.AutoRebase,
		Timeout: timeout, Env: c.Host.Env, Logs: c.Host.Logs, LogLimit: c.Host.LogLimit,
		LogURL: LogURL(c), Work: c.Host.Work,
		Sandbox: box, Secrets: secrets(c), MayLand: landing, Checker: checker,
	})
	if err != nil {
		return nil, fmt.Errorf("host.logs/host.work: %w", err)
	}
	setup.runner = runner
	var led *ledger.Ledger
	var st host.State
	if !clustered {
		if err := runner.Prune(ctx); err != nil {
			log.Warn().Err(err).Msg("cannot prune the worktrees a crash left")
		}
		if led, st, err = ledger.Open(c.Host.Ledger); err != nil {
			return nil, fmt.Errorf("host.ledger: %w", err)
		}
	}
	var comps []string
	for _, comp := range c.Build.Components {
		comps = append(comps, comp.Name)
	}
	mentions := []string{"@" + c.Server.Name, coord}
	o := Options{
		Chat: agentchat.Config{
			URL: c.Server.URL, Channel: c.Server.Channel, Name: c.Host.Name, Identity: id,
			RateLimit: rateLimit(c.Server.RateLimit), MaxMessage: c.Server.MaxMessage, FloodLimit: c.Server.FloodLimit,
			Logger: log.With().Str("part", "room").Logger(),
		},
		Core: host.Config{
			Self: self, Coordinator: coord, Components: comps, Mentions: mentions,
			Gating: c.Rules.CIGating, External: c.Rules.Merge == coordinator.MergeExternal,
			Auditors: c.Roles.Auditors, Verified: c.Rules.RequireVerified,
			MaxParallel: c.Host.MaxParallel, Batch: c.Host.Batch, FailureDepth: c.Host.FailureDepth,
			BatchMin: c.Host.BatchMin, BatchWait: c.Host.BatchWait,
			Target: c.Host.Target, Prune: c.Host.Prune, BranchNamespaces: c.Host.BranchNamespaces, Repository: c.RepositoryName(), Checks: gitjob.CheckNames(c.Host.Checks),
			Squash:          c.Host.LandAs == config.LandSquash,
			FlakyThreshold:  c.Host.FlakyThreshold,
			Retries:         c.Host.Retries,
			OverlapInterval: c.Host.OverlapInterval,
			Sign:            func(s receipt.Signed) ([]byte, error) { return receipt.Sign(s, id) },
		},
		State: st, Jobs: runner, QueueFile: QueueFile(c.Host.Logs), Logger: log,
	}
	if led != nil {
		o.Ledger = led
	}
	ready = true
	setup.Options, setup.Ledger = o, led
	return setup, nil
}

func rateLimit(d time.Duration) time.Duration {
	if d == 0 {
		return -1 // the room has no limit
	}
	return d
}

// coordinatorID is foreman's sender id: host.coordinator, or the id of the
// key in server.identity (the host usually runs beside foreman, from the
// same configuration).
func coordinatorID(c *config.Config) (string, error) {
	if c.Host.Coordinator != "" {
		return c.Host.Coordinator, nil
	}
	id, err := agentchat.LoadIdentity(c.Server.Identity)
	if err != nil {
		return "", fmt.Errorf("host.coordinator: not set, and foreman's key (server.identity %s) cannot be read (%v); set it to foreman's sender id", c.Server.Identity, err)
	}
	return id.AgentID(), nil
}

// Roles checks that foreman will take the host's lines: its id must be in
// roles.ci when it reports CI (unless that role is left open to anyone) and
// in roles.merger when it lands.
func Roles(c *config.Config, self string) (warnings []string, err error) {
	if c.Rules.CIGating {
		switch {
		case len(c.Roles.CI) == 0:
			warnings = append(warnings, fmt.Sprintf("roles.ci is empty, so anyone but a builder may report CI; list the host's id %s there", self))
		case !slices.Contains(c.Roles.CI, self):
			return nil, fmt.Errorf("roles.ci: does not list the host's id %s (the key in host.identity %s); add it, or foreman refuses its CI lines", self, c.Host.Identity)
		}
	}
	if c.Rules.Merge == coordinator.MergeExternal && !slices.Contains(c.Roles.Merger, self) {
		return nil, fmt.Errorf("roles.merger: does not list the host's id %s (the key in host.identity %s); add it, or foreman refuses its MERGED", self, c.Host.Identity)
	}
	if c.Rules.Merge != coordinator.MergeExternal {
		warnings = append(warnings, "rules.merge is accept: foreman says MERGED on AUDIT PASS and the host lands nothing (set it to external for landings)")
	}
	if len(c.Host.Checks) == 0 {
		warnings = append(warnings, "host.checks is empty: every branch that merges cleanly passes")
	}
	return warnings, nil
}

// LogURL is where the board serves the check logs: host.log_url, else the
// board's own address (http.listen) when it has a fixed port.
func LogURL(c *config.Config) string {
	if c.Host.LogURL != "" {
		return c.Host.LogURL
	}
	host, port, err := net.SplitHostPort(c.HTTP)
	if c.HTTP == "" || err != nil || port == "0" {
		return ""
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/ci/logs"
}

// Main runs foreman host from a configuration until ctx ends: the whole of
// `foreman host`, also run by tests as a process of its own.
func Main(ctx context.Context, c *config.Config, log zerolog.Logger, out io.Writer) error {
	s, err := Prepare(ctx, c, log)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Serve(ctx, c, log, out)
}

// Serve runs a prepared host until ctx ends: Main once Prepare has checked
// everything. foreman up prepares the host with its other parts, before it
// starts any of them, and serves it here.
func (s *Setup) Serve(ctx context.Context, c *config.Config, log zerolog.Logger, out io.Writer) error {
	for _, w := range s.Warnings {
		log.Warn().Msg(w)
	}
	for _, line := range s.Confinement {
		if s.workers != nil {
			log.Info().Msg(line)
			continue
		}
		log.Info().Str("sandbox", line).Msg("checks run confined")
	}
	abs, _ := filepath.Abs(s.Options.QueueFile)
	confined := "checks sandboxed (foreman host --check-sandbox says how)"
	switch {
	case s.workers != nil:
		confined = "checks run by workers (foreman worker) through " + c.Cluster.NATS
	case c.Host.Unconfined:
		confined = "CHECKS RUN UNCONFINED (host.sandbox: off)"
	}
	if c.Cluster.Enabled() {
		fmt.Fprintf(out, "foreman host %s: for build %s in the cluster at %s, checking %s (target %s) for %s at %s once it leads; queue in %s; %s\n",
			s.Identity.AgentID(), c.Build.Name, c.Cluster.NATS, s.Repo.Dir(), c.Host.Target, c.Server.Channel, c.Server.URL, abs, confined)
		return s.serveCluster(ctx, c, log)
	}
	fmt.Fprintf(out, "foreman host %s: checking %s (target %s) for %s at %s; queue in %s; %s\n",
		s.Identity.AgentID(), s.Repo.Dir(), c.Host.Target, c.Server.Channel, c.Server.URL, abs, confined)
	err := Run(ctx, s.Options)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// noTarget says why host.target is not a branch of the repository, and
// what to do: a repository with no commit yet needs a first one; another
// names its branches.
func noTarget(ctx context.Context, repo *gitrepo.Repo, target string) error {
	heads, _ := repo.Refs(ctx, "refs/heads/")
	if len(heads) == 0 {
		return fmt.Errorf("host.target: no branch %s in %s: the repository has no commit yet; make a first one on %s (git commit --allow-empty -m start, then push it there if this is a bare repository) and start again", target, repo.Dir(), target)
	}
	names := make([]string, 0, len(heads))
	for ref := range heads {
		names = append(names, strings.TrimPrefix(ref, "refs/heads/"))
	}
	slices.Sort(names)
	return fmt.Errorf("host.target: no branch %s in %s; set host.target to one of its branches (%s), or make %s there (git branch %s COMMIT)", target, repo.Dir(), strings.Join(names, ", "), target, target)
}
