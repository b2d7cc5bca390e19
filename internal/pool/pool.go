package pool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/internal/bot"
	"github.com/agentforeman/foreman/internal/cluster"
	"github.com/agentforeman/foreman/internal/config"
)

// Build is one build the pool may lead.
type Build struct {
	Config *config.Config
	// Reload reads the build's config again (SIGHUP); nil: never.
	Reload func() (*config.Config, error)
}

// Options configure a Pool. Cluster and Builds are required.
type Options struct {
	Cluster  *cluster.Cluster
	Builds   []Build
	Capacity int // the most builds led at once; default: all of them
	Logger   zerolog.Logger
	// NewBuild starts each build's log over at this process's first
	// takeover of it (foreman run --new-build).
	NewBuild bool
	// Bot, if set, adjusts the options of each bot the pool starts (the
	// board's hooks).
	Bot func(build string, o *bot.Options)
	// Led, if set, is told when this process starts leading a build and
	// when it stops (b nil).
	Led func(build string, b *bot.Bot)
	// Fatal ends Run at a build's refusal or failure, as foreman run
	// alone exits; otherwise the pool leaves that build be and goes on.
	// Losing a lease is never fatal: the process stands by again.
	Fatal bool
	// Reload delivers SIGHUP to every build led.
	Reload <-chan struct{}
	// Takeovers bounds how many builds are being opened at once (default 16).
	Takeovers int
}

// Slot states.
const (
	Standby  = "standby"
	Starting = "starting"
	Leading  = "leading"
	Refused  = "refused"
)

// Pool leads builds under leases.
type Pool struct {
	opts  Options
	cl    *cluster.Cluster
	log   zerolog.Logger
	watch *cluster.Watch
	peers *cluster.Peers
	slots []*slot
	sem   chan struct{}
	fatal chan error
	wg    sync.WaitGroup
	ready time.Time // when the pool began to take leases

	mu        sync.Mutex // every slot's state
	held      int
	overSince time.Time // when the process went well over its share
	lastShed  time.Time
}

type slot struct {
	b    Build
	name string
	fp   string

	state    string
	lease    *cluster.Lease
	bot      *bot.Bot
	problem  string    // why refused, or what went wrong last
	retryAt  time.Time // not before then
	newBuild bool
	reload   chan struct{}
	shed     chan struct{}
}

// New checks the builds (one name each) and prepares the pool.
func New(opts Options) (*Pool, error) {
	if len(opts.Builds) == 0 {
		return nil, errors.New("no builds to lead")
	}
	if opts.Capacity <= 0 {
		opts.Capacity = len(opts.Builds)
	}
	if opts.Takeovers <= 0 {
		opts.Takeovers = 16
	}
	p := &Pool{opts: opts, cl: opts.Cluster, log: opts.Logger, sem: make(chan struct{}, opts.Takeovers), fatal: make(chan error, 1)}
	seen := map[string]string{}
	for _, b := range opts.Builds {
		name := b.Config.Build.Name
		if f, dup := seen[name]; dup {
			return nil, fmt.Errorf("%s: build.name: %q is also the name of the build in %s; every build of a pool needs its own", b.Config.File, name, f)
		}
		seen[name] = b.Config.File
		p.slots = append(p.slots, &slot{b: b, name: name, fp: Fingerprint(b.Config), state: Standby,
			newBuild: opts.NewBuild, reload: make(chan struct{}, 1)})
	}
	return p, nil
}

// tick is how often the pool looks for builds to take: a lapse or a
// release is seen within a tick. (Not at every change of a lease: a pool
// of a thousand builds sees over a thousand renewals a second.)
func (p *Pool) tick() time.Duration { return min(p.cl.LeaseTTL()/10, 100*time.Millisecond) }

// Run stands by and leads until ctx ends: then every build led is shut
// down gracefully and its lease released, so standbys take over at once.
func (p *Pool) Run(ctx context.Context) error {
	w, err := p.cl.WatchLeases(ctx)
	if err != nil {
		return err
	}
	defer w.Stop()
	peers, err := p.cl.Peers(ctx)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.watch, p.peers = w, peers
	p.mu.Unlock()
	defer p.peers.Stop()
	select {
	case <-w.Ready():
	case <-ctx.Done():
		return nil
	}
	// Before taking anything, see who else is in the pool, so that the
	// builds are shared from the start.
	p.peers.Announce(ctx, 0, p.opts.Capacity)
	select {
	case <-time.After(p.cl.LeaseTTL() / 2):
	case <-ctx.Done():
		return nil
	}
	p.ready = time.Now()
	p.log.Info().Str("id", p.cl.ID()).Int("builds", len(p.slots)).Int("capacity", p.opts.Capacity).
		Dur("lease", p.cl.LeaseTTL()).Msg("in the cluster: standing by, and leading what is free")

	runCtx, stopAll := context.WithCancel(context.Background())
	defer stopAll()
	t := time.NewTicker(p.tick())
	defer t.Stop()
	announce := time.NewTicker(p.cl.LeaseTTL() / 2)
	defer announce.Stop()
	var fatal error
	for fatal == nil {
		select {
		case <-ctx.Done():
		case fatal = <-p.fatal:
		case <-t.C:
		case <-announce.C:
			p.peers.Announce(ctx, p.heldNow(), p.opts.Capacity)
		case <-p.opts.Reload:
			p.reloadAll()
		}
		if ctx.Err() != nil {
			break
		}
		if err := p.consider(runCtx); err != nil {
			fatal = err
		}
	}
	stopAll()
	p.wg.Wait()
	p.peers.Leave()
	return fatal
}

func (p *Pool) heldNow() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// share is this process's fair part of the builds: all of them split
// over the processes alive, rounded up.
func (p *Pool) share() int {
	n := max(1, p.peers.Alive())
	return (len(p.slots) + n - 1) / n
}

// consider takes the free builds this process may lead, and hands over
// some when it leads more than its share while others have room.
func (p *Pool) consider(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	limit := min(p.opts.Capacity, p.share())
	for _, s := range p.slots {
		if s.state != Standby && s.state != Refused || now.Before(s.retryAt) {
			continue
		}
		// A leader, alive or dead without a word, that runs another config
		// for the build: taking over would run the build two ways. A
		// released lease is an operator's clean stop; a new config then is
		// a restart with a changed config, as alone.
		o := p.watch.Lease(s.name)
		if !o.Absent && o.Rec.Holder != "" && o.Rec.Config != "" && o.Rec.Config != s.fp {
			err := &cluster.RefusedError{Why: fmt.Sprintf(
				"build %s: this foreman's config (fingerprint %s, from %s) is not the one its leader runs (%s): it will not stand by for it; give every foreman of the build the same config",
				s.name, s.fp, s.b.Config.File, o.Rec.Config)}
			if p.opts.Fatal {
				return err
			}
			if s.problem != err.Why {
				p.log.Error().Str("build", s.name).Msg(err.Why)
			}
			s.state, s.problem, s.retryAt = Refused, err.Why, now.Add(p.cl.LeaseTTL())
			continue
		}
		if s.state == Refused {
			s.state, s.problem = Standby, ""
		}
		o, free := p.watch.Free(s.name)
		if !free || p.held >= p.opts.Capacity {
			continue
		}
		if over := p.held - limit; over >= 0 && p.freeFor(o) < p.orphanAfter()+time.Duration(over)*p.tick()/4 {
			continue // let a process under its share take it, or one less over it; take it if none does
		}
		s.state = Starting
		p.held++
		p.wg.Add(1)
		go p.lead(ctx, s, o)
	}
	// Hand over builds only when well over the share for two leases on
	// end, and a few at a time: the count of processes alive wavers under
	// load, and shedding on every wave would move builds back and forth.
	if excess := p.held - limit; excess > max(2, limit/5) && p.peers.Room() > 0 {
		if p.overSince.IsZero() {
			p.overSince = now
		}
		if now.Sub(p.overSince) >= 2*p.cl.LeaseTTL() && now.Sub(p.lastShed) >= p.cl.LeaseTTL() {
			p.shed(min(max(1, excess/2), 10))
			p.lastShed = now
		}
	} else {
		p.overSince = time.Time{}
	}
	return nil
}

// orphanAfter is how long a free build waits for a process under its share
// before any process with room takes it: a few ticks, so that a dead
// process's builds are shared out and still taken soon after their leases
// lapse (its peers may not know yet that it is gone).
func (p *Pool) orphanAfter() time.Duration { return max(3*p.tick(), p.cl.LeaseTTL()/4) }

// freeFor is how long a free lease has been free, as this process saw it.
func (p *Pool) freeFor(o cluster.Observed) time.Duration {
	switch {
	case o.Absent && o.Rev == 0:
		return time.Since(p.ready)
	case o.Absent, o.Rec.Holder == "":
		return p.cl.Mono() - o.Seen
	}
	return p.cl.Mono() - o.Seen - o.Rec.TTL()
}

// shed hands over n builds: their leaders stop gracefully and release the
// leases, and this process waits a while before it takes any of them back.
func (p *Pool) shed(n int) {
	for i := len(p.slots) - 1; i >= 0 && n > 0; i-- {
		s := p.slots[i]
		if s.state == Leading && s.shed != nil {
			close(s.shed)
			s.shed = nil
			n--
		}
	}
}

func (p *Pool) reloadAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.slots {
		if s.state == Leading {
			select {
			case s.reload <- struct{}{}:
			default:
			}
		}
	}
}

// set changes a slot's state under the lock.
func (p *Pool) set(s *slot, f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f()
}
