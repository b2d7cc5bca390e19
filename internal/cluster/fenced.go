package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Headers of the fenced streams' messages.
const (
	hdrEpoch  = "Foreman-Epoch"
	hdrHolder = "Foreman-Holder"
)

// fenced is a stream that only its lease's holder appends to: a build's
// log (foreman's) or its host ledger (the host's). Every append expects the
// sequence of the last message this process knows, so once another process
// has fenced the stream, the next append fails and the stream refuses this
// process everything after.
type fenced struct {
	c      *Cluster
	lease  *Lease
	build  string
	key    string
	name   string // the stream's
	stream jetstream.Stream

	last  uint64 // the stream's last sequence as this holder made it: the next append expects it
	first uint64 // the stream's first sequence at open
	epoch uint64

	fmu    sync.Mutex
	failed error // sticky: deposed, the lease lost, or the stream gone

	// gone is the refusal when the stream was deleted under its holder.
	gone func() error
}

func (c *Cluster) newFenced(l *Lease) fenced {
	return fenced{c: c, lease: l, build: l.build, key: l.key, name: l.set.prefix + l.key, epoch: l.Epoch()}
}

// ensureStream makes the build's stream of set if it is not there.
// Standbys may race to make it; on a NATS cluster a create that loses such
// a race can go unanswered, so each attempt is short (ensure), and the next
// look finds the stream made.
func (c *Cluster) ensureStream(ctx context.Context, set *leaseSet, key string) (jetstream.Stream, error) {
	cfg := jetstream.StreamConfig{
		Name:        set.prefix + key,
		Description: "foreman: " + set.what + " of a build, appended to by its leader alone",
		Subjects:    []string{set.records(key), set.fence(key)},
		Storage:     jetstream.FileStorage,
		Replicas:    c.opts.Replicas,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardNew, // never drop old records to make room
		Duplicates:  2 * time.Minute,
		AllowDirect: true,
	}
	return ensure(ctx,
		func(ctx context.Context) (jetstream.Stream, error) { return c.js.Stream(ctx, cfg.Name) },
		func(ctx context.Context) (jetstream.Stream, error) { return c.js.CreateStream(ctx, cfg) },
		jetstream.ErrStreamNotFound, jetstream.ErrStreamNameAlreadyInUse)
}

// fence puts this holder's mark after everything in the stream: from here
// on, an append by any earlier holder expects a sequence that is gone.
// Appends a deposed holder slipped in first are read as part of the
// stream.
func (f *fenced) fence(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		info := f.stream.CachedInfo() // as it was when the stream was looked up: one round trip less
		if attempt > 0 || info == nil {
			var err error
			if info, err = f.stream.Info(ctx); err != nil {
				return fmt.Errorf("%s of %s: %w", f.lease.set.what, f.build, err)
			}
		}
		m := nats.NewMsg(f.lease.set.fence(f.key))
		m.Header.Set(hdrEpoch, strconv.FormatUint(f.epoch, 10))
		m.Header.Set(hdrHolder, f.c.opts.ID)
		ack, err := f.c.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequence(info.State.LastSeq))
		if err == nil {
			f.last, f.first = ack.Sequence, info.State.FirstSeq
			return nil
		}
		if !wrongLastSeq(err) || attempt == 10 {
			return fmt.Errorf("fencing %s of %s: %w", f.lease.set.what, f.build, err)
		}
	}
}

func wrongLastSeq(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// Epoch is the epoch this stream was fenced with.
func (f *fenced) Epoch() uint64 { return f.epoch }

// maxBody is the most one message may carry, less room for its headers.
func (f *fenced) maxBody() int { return int(f.c.nc.MaxPayload()) - 1024 }

// publish appends one message, expecting the stream's last sequence to be
// this holder's last, and returns its sequence. A retry after a lost
// answer carries the same message id; a different message in that place
// means another holder has fenced the stream: it is then refused for good.
func (f *fenced) publish(body []byte) (uint64, error) {
	id := fmt.Sprintf("%s/%d/%d", f.key, f.epoch, f.last)
	began := time.Now()
	for {
		if !f.lease.Valid() {
			return 0, f.fail(ErrLeaseLost)
		}
		m := nats.NewMsg(f.lease.set.records(f.key))
		m.Data = body
		m.Header.Set(hdrEpoch, strconv.FormatUint(f.epoch, 10))
		ctx, cancel := context.WithTimeout(context.Background(), renewEvery(f.lease.ttl))
		ack, err := f.c.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequence(f.last), jetstream.WithMsgID(id))
		cancel()
		if err == nil {
			f.last = ack.Sequence
			f.c.m.appended(time.Since(began))
			return ack.Sequence, nil
		}
		if wrongLastSeq(err) {
			if f.landed(id) {
				f.last++
				f.c.m.appended(time.Since(began))
				return f.last, nil
			}
			f.lease.lose(ErrDeposed)
			return 0, f.fail(ErrDeposed)
		}
		if errors.Is(err, jetstream.ErrStreamNotFound) || f.isGone() {
			return 0, f.fail(f.gone())
		}
		if errors.Is(err, nats.ErrMaxPayload) {
			return 0, f.fail(fmt.Errorf("a message of %d bytes is over the NATS server's max_payload: %w", len(body), err))
		}
		f.c.log.Warn().Err(err).Str("build", f.build).Str("stream", f.name).Msg("could not append; trying again while the lease holds")
		time.Sleep(retryPause)
	}
}

// retryPause spaces the attempts of an append that failed at once (NATS
// is reconnecting, a stream is electing its leader).
const retryPause = 50 * time.Millisecond

// landed reports whether the message after this holder's last is its own
// (an append whose answer was lost).
func (f *fenced) landed(id string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), renewEvery(f.lease.ttl))
	defer cancel()
	m, err := f.stream.GetMsg(ctx, f.last+1)
	return err == nil && m.Header.Get(jetstream.MsgIDHeader) == id
}

// isGone reports whether the stream no longer exists.
func (f *fenced) isGone() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := f.c.js.Stream(ctx, f.name)
	return errors.Is(err, jetstream.ErrStreamNotFound)
}

func (f *fenced) usable() error {
	f.fmu.Lock()
	defer f.fmu.Unlock()
	return f.failed
}

func (f *fenced) fail(err error) error {
	f.fmu.Lock()
	defer f.fmu.Unlock()
	if f.failed == nil {
		f.failed = err
	}
	return f.failed
}
