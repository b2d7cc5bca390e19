package live

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/internal/cluster"
	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/host/ledger"
)

// With cluster.nats set, foreman host is one of several processes for one
// build: the same configuration and key, on the same repository (the same
// machine, or a disk every one of them mounts at the same path). One leads
// the build: it holds the build's host lease (cluster.AcquireHost: the
// lease, epoch and compare-and-set foreman's builds have), is in the room,
// runs the jobs and appends to the build's ledger in JetStream. The others
// stand by, out of the room (a second connection with the same key would
// displace the leader's), and take over when the lease lapses, counted on
// their own clock, or is released (SIGTERM).
//
// A host that lost its lease goes silent at once: every line passes the
// lease's gate right before the socket, every landing right before the
// compare-and-swap, and its next ledger append fails on the fence a new
// leader put (the shell writes the ledger before it says or starts
// anything). The new leader reads the ledger, prunes what the last one
// left, and makes the train again from the room as a restart does: it
// lands nothing twice (a landing finds its commit on the target and only
// says MERGED) and reports no stale verdict (the room says what is owed).

// errNotLeading holds a landing back in a process that does not lead the
// build (any more).
var errNotLeading = errors.New("this host does not lead the build (its host lease is lost): it lands nothing")

// mayLandLeading is the landing check of a host in a cluster: it lands
// only while it holds the build's host lease, then what roles asks.
func (s *Setup) mayLandLeading(roles func() error) func() error {
	return func() error {
		if g := s.leading.Load(); g == nil || !(*g)() {
			return errNotLeading
		}
		if roles != nil {
			return roles()
		}
		return nil
	}
}

// serveCluster stands by for the build and leads it whenever this process
// holds its host lease, until ctx ends (then it hands the build over at
// once) or something is refused.
func (s *Setup) serveCluster(ctx context.Context, c *config.Config, log zerolog.Logger) error {
	build := c.Build.Name
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cl, err := cluster.Connect(cctx, cluster.FromConfig(c.Cluster, cluster.RoleHost, log.With().Str("part", "cluster").Logger()))
	if err != nil {
		var refused *cluster.RefusedError
		if errors.As(err, &refused) {
			return err
		}
		return fmt.Errorf("cluster.nats: %w", err)
	}
	defer cl.Close()
	w, err := cl.WatchHosts(ctx)
	if err != nil {
		return err
	}
	defer w.Stop()
	fp := HostFingerprint(c, s.Identity.AgentID())
	var state atomic.Value
	state.Store(cluster.HostStandby)
	announced := make(chan struct{})
	actx, stopAnnouncing := context.WithCancel(ctx)
	go func() { // for foreman cluster status only
		defer close(announced)
		t := time.NewTicker(cl.LeaseTTL() / 2)
		defer t.Stop()
		for {
			cl.AnnounceHost(actx, build, state.Load().(string))
			select {
			case <-actx.Done():
				return
			case <-t.C:
			}
		}
	}()
	defer func() { stopAnnouncing(); <-announced; cl.LeaveHost() }()
	select {
	case <-w.Ready():
	case <-ctx.Done():
		return nil
	}
	log.Info().Str("id", cl.ID()).Str("build", build).Str("config", fp).Dur("lease", cl.LeaseTTL()).Msg("in the cluster: standing by for the build's host lease")
	tick := time.NewTicker(min(cl.LeaseTTL()/10, 100*time.Millisecond))
	defer tick.Stop()
	for {
		o, free := w.Free(build)
		if !o.Absent && o.Rec.Holder != "" && o.Rec.Holder != cl.ID() && o.Rec.Config != "" && o.Rec.Config != fp {
			return &cluster.RefusedError{Why: fmt.Sprintf(
				"build %s: this host's config (fingerprint %s, from %s) is not the one its leading host runs (%s): it will not stand by for it; give every host of the build the same config and key",
				build, fp, c.File, o.Rec.Config)}
		}
		if free {
			l, err := cl.AcquireHost(ctx, build, fp, o)
			switch {
			case errors.Is(err, cluster.ErrTaken):
			case err != nil:
				var refused *cluster.RefusedError
				if errors.As(err, &refused) {
					return err
				}
				log.Warn().Err(err).Msg("could not take the host lease; trying again")
			default:
				state.Store(cluster.HostLeading)
				err = s.lead(ctx, cl, l, log)
				state.Store(cluster.HostStandby)
				rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				if rerr := l.Release(rctx); rerr != nil {
					log.Warn().Err(rerr).Msg("could not release the host lease")
				}
				cancel()
				if ctx.Err() != nil {
					return nil
				}
				var refused *cluster.RefusedError
				if errors.As(err, &refused) {
					return err
				}
				if lost := l.Err(); lost != nil && !errors.Is(lost, cluster.ErrReleased) {
					why := lost.Error()
					switch {
					case errors.Is(lost, cluster.ErrDeposed):
						why = "another host took the build over (its fence is in the ledger)"
					case errors.Is(lost, cluster.ErrLeaseLost):
						why = "could not renew the host lease in time, so a standby may take the build over"
					}
					log.Warn().Str("why", why).Uint64("epoch", l.Epoch()).Msg("no longer leading the build; standing by")
					break
				}
				// It stopped for another reason (the room refused it for
				// good, say): a lease later, this or another process tries.
				log.Error().Err(err).Uint64("epoch", l.Epoch()).Msg("the host stopped; standing by for the build")
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(cl.LeaseTTL()):
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-w.Changed():
		case <-tick.C:
		}
	}
}

// lead runs the host for the build while this process holds l: the
// repository's lock (waited for: the last leader, on this machine, lets it
// go when it stops), the ledger fenced and read, what the last leader left
// pruned, then the host as a restart runs it, until the lease is lost or
// ctx ends.
func (s *Setup) lead(ctx context.Context, cl *cluster.Cluster, l *cluster.Lease, log zerolog.Logger) error {
	began := time.Now()
	leadCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-l.Lost():
			stop()
		case <-leadCtx.Done():
		}
	}()
	lock, err := waitLock(leadCtx, s.Repo, log)
	if err != nil {
		return err
	}
	defer lock.Close()
	lg, err := cl.OpenLedger(leadCtx, l)
	if err != nil {
		return err
	}
	led, st, err := ledger.OpenStream(leadCtx, lg)
	if err != nil {
		return err
	}
	if err := s.runner.Prune(leadCtx); err != nil {
		log.Warn().Err(err).Msg("cannot prune the worktrees the last leader left")
	}
	// The workers take this leader's jobs from now; what the last one
	// queued is dropped (the train is made again) and its results, of
	// runs below the ledger's last, are never taken for this one's.
	stopWorkers, err := s.workers.start(leadCtx, st.LastRun, log)
	if err != nil {
		return err
	}
	defer stopWorkers()
	valid := l.Valid
	s.leading.Store(&valid)
	defer s.leading.Store(nil)
	o := s.Options
	o.State, o.Ledger, o.Chat.Gate = st, led, l.Valid
	log.Info().Uint64("epoch", l.Epoch()).Int("passes", len(st.Passes)).Int("interrupted", len(st.InFlight)).
		Dur("took", time.Since(began)).Msg("leading the build: in the room, the train made again from what foreman says")
	err = Run(leadCtx, o)
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// waitLock takes the repository's host lock, waiting while another process
// holds it: in a cluster that is the last leader on this machine, stopping
// (a deposed leader lets it go once its jobs have stopped; a dead one, at
// once). Another host of another config holding it is said once.
func waitLock(ctx context.Context, repo interface{ GitDir() string }, log zerolog.Logger) (*os.File, error) {
	said := false
	for {
		f, err := tryLock(repo.GitDir())
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, errLocked) {
			return nil, err
		}
		if !said {
			said = true
			log.Warn().Str("lock", filepath.Join(repo.GitDir(), lockFile)).Msg("leading the build, waiting for the repository's host lock: another host process on this machine holds it (the last leader, stopping, or a host of another config)")
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// HostFingerprint sums up what a host does for a build, so that a standby
// with another configuration never takes over from the leader: the build
// (as foreman's fingerprint has it), the host's key, repository, target,
// checks and limits. Not its display name or its cluster id, which are
// each process's own.
func HostFingerprint(c *config.Config, self string) string {
	repo, _ := filepath.Abs(c.Host.Repo)
	h := c.Host
	data, _ := json.Marshal(struct {
		Name, URL, Channel, Self, Repo, Target string
		Components, Roles, Rules               any
		Checks, Labels                         [][]string
		Env                                    []string
		MaxParallel, Retries                   int
		AutoRebase, Prune, Unconfined          bool
		Net                                    string
		RO, RW                                 []string
		Limits                                 any
		// How the train checks and lands: a standby taking over its
		// leader's records must make the same commits of the same chains
		// (land_as) and the same batches.
		LandAs                        string
		Batch, BatchMin, FailureDepth int
		BatchWait                     time.Duration
		FlakyThreshold                float64
	}{c.Build.Name, c.Server.URL, c.Server.Channel, self, repo, h.Target, c.Build.Components, c.Roles, c.Rules,
		h.Checks, h.CheckLabels, h.Env, h.MaxParallel, h.Retries, h.AutoRebase, h.Prune, h.Unconfined, h.SandboxNet, h.SandboxRO, h.SandboxRW, h.SandboxLimits,
		h.LandAs, h.Batch, h.BatchMin, h.FailureDepth, h.BatchWait, h.FlakyThreshold})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:6])
}
