package pool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/internal/bot"
	"github.com/agentforeman/foreman/internal/cluster"
	"github.com/agentforeman/foreman/internal/config"
)

// lead takes the build over and leads it until the lease is lost, the bot
// stops, or the pool stops.
func (p *Pool) lead(ctx context.Context, s *slot, o cluster.Observed) {
	defer p.wg.Done()
	log := p.log.With().Str("build", s.name).Logger()
	err := p.leadOnce(ctx, s, o, log)
	p.set(s, func() {
		p.held--
		s.lease, s.bot, s.shed = nil, nil, nil
		s.state = Standby
		if err == nil {
			return
		}
		s.problem = err.Error()
		var refused *cluster.RefusedError
		var botRefused *bot.RefusedError
		switch {
		case errors.Is(err, cluster.ErrTaken):
			s.problem = ""
		case errors.Is(err, errHandedOver):
			s.problem, s.retryAt = "", time.Now().Add(2*p.cl.LeaseTTL())
		case errors.Is(err, cluster.ErrDeposed), errors.Is(err, cluster.ErrLeaseLost):
			log.Warn().Err(err).Msg("no longer leading the build; standing by")
		case errors.As(err, new(*transientError)):
			s.retryAt = time.Now().Add(p.cl.LeaseTTL())
			log.Warn().Err(err).Msg("could not take the build over; standing by, and trying again")
		case errors.As(err, &refused), errors.As(err, &botRefused):
			s.state, s.retryAt = Refused, time.Now().Add(30*time.Second)
			log.Error().Err(err).Msg("refused to lead the build")
			p.fail(err)
		default:
			s.retryAt = time.Now().Add(p.cl.LeaseTTL())
			log.Error().Err(err).Msg("the build stopped; standing by for it")
			p.fail(err)
		}
	})
}

func (p *Pool) fail(err error) {
	if !p.opts.Fatal {
		return
	}
	select {
	case p.fatal <- err:
	default:
	}
}

var errHandedOver = errors.New("handed over to a process with room")

// transientError is trouble reaching JetStream while taking a build over
// (a NATS node down, a stream electing its leader): the process stands by
// and tries again, however few builds it runs.
type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

func transient(err error) error {
	var refused *cluster.RefusedError
	if errors.Is(err, cluster.ErrTaken) || errors.As(err, &refused) {
		return err
	}
	return &transientError{err}
}

func (p *Pool) leadOnce(ctx context.Context, s *slot, o cluster.Observed, log zerolog.Logger) error {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return nil
	}
	opened := false
	defer func() {
		if !opened {
			<-p.sem
		}
	}()
	began := time.Now()
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	l, err := p.cl.Acquire(octx, s.name, s.fp, o)
	if err != nil {
		return transient(err)
	}
	acquired := time.Now()
	release := func() {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := l.Release(rctx); err != nil {
			log.Warn().Err(err).Msg("could not release the lease")
		}
	}
	newBuild := s.newBuild
	lg, err := p.cl.OpenLog(octx, l, newBuild)
	if err != nil {
		release()
		return transient(err)
	}
	logOpened := time.Now()
	s.newBuild = false
	lg.Snapshotted = func(index uint64, took time.Duration, err error) {
		if err != nil {
			log.Error().Err(err).Uint64("index", index).Msg("could not save a snapshot; the log still holds everything")
		}
	}
	bopts := bot.Options{
		Config: s.b.Config, Logger: log, Storage: lg, Gate: l.Valid, NewBuild: newBuild,
		StorageName: fmt.Sprintf("the cluster's log of %s (stream %s)", s.name, cluster.StreamName(s.name)),
		Reload:      s.reload,
	}
	if s.b.Reload != nil {
		// A reload changes the config the standbys must match: the lease
		// says so from its next renewal.
		bopts.ReloadConfig = func() (*config.Config, error) {
			c, err := s.b.Reload()
			if err == nil {
				fp := Fingerprint(c)
				l.SetConfig(fp)
				p.set(s, func() { s.fp = fp })
			}
			return c, err
		}
	}
	if p.opts.Bot != nil {
		p.opts.Bot(s.name, &bopts)
	}
	b, err := bot.New(bopts)
	if err != nil {
		lg.Close()
		release()
		return err
	}
	runCtx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- b.Run(runCtx) }()
	shed := make(chan struct{})
	p.set(s, func() { s.state, s.lease, s.bot, s.shed, s.problem = Leading, l, b, shed, "" })
	opened = true
	<-p.sem
	log.Info().Uint64("epoch", l.Epoch()).Dur("took", time.Since(began)).
		Dur("lease", acquired.Sub(began)).Dur("log", logOpened.Sub(acquired)).Dur("bot", time.Since(logOpened)).
		Msg("leading the build")
	if p.opts.Led != nil {
		p.opts.Led(s.name, b)
		defer p.opts.Led(s.name, nil)
	}
	handedOver := false
	select {
	case <-l.Lost():
		stop()
		err = <-done
		if err == nil || !errors.Is(err, cluster.ErrDeposed) {
			err = l.Err()
		}
	case err = <-done:
	case <-ctx.Done():
		stop()
		err = <-done
	case <-shed:
		handedOver = true
		stop()
		err = <-done
	}
	release()
	if handedOver && err == nil {
		log.Info().Msg("handed the build over to a process with room")
		return errHandedOver
	}
	return err
}
