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

	"github.com/agentforeman/foreman/internal/journal"
	"github.com/agentforeman/foreman/internal/node"
)

// Headers of the log's messages.
const (
	hdrEpoch  = "Foreman-Epoch"
	hdrHolder = "Foreman-Holder"
)

// Log is a build's log in its stream: node.Storage for a foreman that holds
// the build's lease. Every append expects the sequence of the last message
// this process knows, so once another process has fenced the stream, the
// next append fails and the log refuses everything after.
type Log struct {
	c      *Cluster
	lease  *Lease
	build  string
	key    string
	stream jetstream.Stream

	last  uint64 // the stream's last sequence as this leader made it: the next append expects it
	first uint64 // the stream's first sequence at open
	epoch uint64
	snap  *node.Snapshot
	alive time.Time

	mu      sync.Mutex
	commits []commit // commits since the last purge: where a snapshot lets the log be cut
	failed  error    // sticky: deposed, the lease lost, or the log gone

	snapping sync.WaitGroup
	busy     chan struct{}
	// Snapshotted, if set, is told how each background snapshot went.
	Snapshotted func(index uint64, took time.Duration, err error)
}

type commit struct {
	seq  uint64 // the message's stream sequence
	last uint64 // the index of its last entry
}

// OpenLog fences the build's stream for this leader and reads its latest
// snapshot. newBuild starts the build's log over (foreman run --new-build).
func (c *Cluster) OpenLog(ctx context.Context, l *Lease, newBuild bool) (*Log, error) {
	lg := &Log{c: c, lease: l, build: l.build, key: l.key, epoch: l.Epoch(), busy: make(chan struct{}, 1)}
	name := streamPrefix + l.key
	if newBuild {
		if err := c.js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("starting %s over: %w", l.build, err)
		}
		_ = c.state.Purge(ctx, snapKey(l.key))
	}
	s, err := c.js.Stream(ctx, name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound) && (newBuild || lg.epoch == 1):
		s, err = c.ensureStream(ctx, l.key)
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return nil, &RefusedError{Why: fmt.Sprintf(
			"the log of build %s (stream %s) is gone, though the build was led before (this is its epoch %d): it was deleted by hand, and foreman will not guess what it held; restore it, or start over with foreman run --new-build",
			l.build, name, lg.epoch)}
	}
	if err != nil {
		return nil, fmt.Errorf("the log of %s: %w", l.build, err)
	}
	lg.stream = s
	if err := lg.fence(ctx); err != nil {
		return nil, err
	}
	if lg.snap, err = c.readSnapshot(ctx, l.key); err != nil {
		return nil, err
	}
	if !newBuild {
		lg.alive = l.alive() // the last leader's, carried over by the takeover
	}
	return lg, nil
}

// ensureStream makes the build's stream if it is not there. Standbys may
// race to make it; on a NATS cluster a create that loses such a race can go
// unanswered, so each attempt is short, and the next finds the stream made.
func (c *Cluster) ensureStream(ctx context.Context, key string) (jetstream.Stream, error) {
	cfg := jetstream.StreamConfig{
		Name:        streamPrefix + key,
		Description: "foreman: a build's log, one message per commit",
		Subjects:    []string{logSubject(key), fenceSubject(key)},
		Storage:     jetstream.FileStorage,
		Replicas:    c.opts.Replicas,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardNew, // never drop the log's old entries to make room
		Duplicates:  2 * time.Minute,
		AllowDirect: true,
	}
	for {
		s, err := c.js.Stream(ctx, cfg.Name)
		if err == nil || !errors.Is(err, jetstream.ErrStreamNotFound) {
			return s, err
		}
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		s, err = c.js.CreateStream(actx, cfg)
		cancel()
		switch {
		case err == nil:
			return s, nil
		case ctx.Err() != nil:
			return nil, err
		case errors.Is(err, jetstream.ErrStreamNameAlreadyInUse), errors.Is(err, context.DeadlineExceeded):
			continue // another made it, or is making it: look again
		default:
			return nil, err
		}
	}
}

// fence puts this leader's mark after everything in the stream: from here
// on, an append by any earlier leader expects a sequence that is gone.
// Appends a deposed leader slipped in first are read as part of the log.
func (lg *Log) fence(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		info := lg.stream.CachedInfo() // as it was when the stream was looked up: one round trip less
		if attempt > 0 || info == nil {
			var err error
			if info, err = lg.stream.Info(ctx); err != nil {
				return fmt.Errorf("the log of %s: %w", lg.build, err)
			}
		}
		m := nats.NewMsg(fenceSubject(lg.key))
		m.Header.Set(hdrEpoch, strconv.FormatUint(lg.epoch, 10))
		m.Header.Set(hdrHolder, lg.c.opts.ID)
		ack, err := lg.c.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequence(info.State.LastSeq))
		if err == nil {
			lg.last, lg.first = ack.Sequence, info.State.FirstSeq
			return nil
		}
		if !wrongLastSeq(err) || attempt == 10 {
			return fmt.Errorf("fencing the log of %s: %w", lg.build, err)
		}
	}
}

func wrongLastSeq(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// Epoch is the epoch this log was fenced with.
func (lg *Log) Epoch() uint64 { return lg.epoch }

// Snapshot is the latest snapshot, as read at open.
func (lg *Log) Snapshot() (*node.Snapshot, error) { return lg.snap, nil }

// Append adds entries as one message, expecting the stream's last sequence
// to be this leader's last. A retry after a lost answer carries the same
// message id; a different message in that place means another leader has
// fenced the log: the log is then refused for good. A commit larger than
// NATS takes in one message goes as several, each stored before the next
// (as the journal writes a large batch), and no reply leaves before all.
func (lg *Log) Append(entries []node.Entry) error {
	if err := lg.usable(); err != nil {
		return err
	}
	limit := int(lg.c.nc.MaxPayload()) - 1024 // headers
	var body []byte
	var last uint64
	for _, e := range entries {
		rec, err := journal.EncodeEntry(e)
		if err != nil {
			return err
		}
		if len(rec) > limit {
			return fmt.Errorf("entry %d takes %d bytes, more than one NATS message may hold (the server's max_payload, %d): raise max_payload in the NATS server's config",
				e.Index, len(rec), lg.c.nc.MaxPayload())
		}
		if len(body) > 0 && len(body)+1+len(rec) > limit {
			if err := lg.publish(body, last); err != nil {
				return err
			}
			body = body[:0]
		}
		if len(body) > 0 {
			body = append(body, '\n')
		}
		body = append(body, rec...)
		last = e.Index
	}
	if len(body) == 0 {
		return nil
	}
	return lg.publish(body, last)
}

// publish appends one message of records, whose last entry is last.
func (lg *Log) publish(body []byte, last uint64) error {
	id := fmt.Sprintf("%s/%d/%d", lg.key, lg.epoch, lg.last)
	began := time.Now()
	for {
		if !lg.lease.Valid() {
			return lg.fail(ErrLeaseLost)
		}
		m := nats.NewMsg(logSubject(lg.key))
		m.Data = body
		m.Header.Set(hdrEpoch, strconv.FormatUint(lg.epoch, 10))
		ctx, cancel := context.WithTimeout(context.Background(), renewEvery(lg.lease.ttl))
		ack, err := lg.c.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequence(lg.last), jetstream.WithMsgID(id))
		cancel()
		if err == nil {
			lg.appended(ack.Sequence, last)
			lg.c.m.appended(time.Since(began))
			return nil
		}
		if wrongLastSeq(err) {
			if lg.landed(id) {
				lg.appended(lg.last+1, last)
				lg.c.m.appended(time.Since(began))
				return nil
			}
			lg.lease.lose(ErrDeposed)
			return lg.fail(ErrDeposed)
		}
		if errors.Is(err, jetstream.ErrStreamNotFound) || lg.gone() {
			return lg.fail(&RefusedError{Why: fmt.Sprintf(
				"the log of build %s (stream %s) is gone: it was deleted by hand while this foreman led the build; foreman will not guess what it held: restore it, or start over with foreman run --new-build",
				lg.build, streamPrefix+lg.key)})
		}
		if errors.Is(err, nats.ErrMaxPayload) {
			return lg.fail(fmt.Errorf("a commit of %d bytes is over the NATS server's max_payload: %w", len(body), err))
		}
		lg.c.log.Warn().Err(err).Str("build", lg.build).Msg("could not append to the log; trying again while the lease holds")
		time.Sleep(retryPause)
	}
}

// retryPause spaces the attempts of an append that failed at once (NATS
// is reconnecting, a stream is electing its leader).
const retryPause = 50 * time.Millisecond

// landed reports whether the message after this leader's last is its own
// (an append whose answer was lost).
func (lg *Log) landed(id string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), renewEvery(lg.lease.ttl))
	defer cancel()
	m, err := lg.stream.GetMsg(ctx, lg.last+1)
	return err == nil && m.Header.Get(jetstream.MsgIDHeader) == id
}

// gone reports whether the stream no longer exists.
func (lg *Log) gone() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := lg.c.js.Stream(ctx, streamPrefix+lg.key)
	return errors.Is(err, jetstream.ErrStreamNotFound)
}

func (lg *Log) appended(seq, last uint64) {
	lg.mu.Lock()
	lg.last = seq
	lg.commits = append(lg.commits, commit{seq: seq, last: last})
	lg.mu.Unlock()
}

func (lg *Log) usable() error {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	return lg.failed
}

func (lg *Log) fail(err error) error {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	if lg.failed == nil {
		lg.failed = err
	}
	return lg.failed
}

// Alive is when a leader of the build was last running, as it noted.
func (lg *Log) Alive() (time.Time, error) { return lg.alive, nil }

// SaveAlive notes that this leader is running at t (room time), in the
// lease's record: the next renewal stores it.
func (lg *Log) SaveAlive(t time.Time) error {
	if err := lg.usable(); err != nil {
		return err
	}
	if !lg.lease.Valid() {
		return lg.fail(ErrLeaseLost)
	}
	lg.lease.setAlive(t) // with the next renewal
	lg.alive = t
	return nil
}

// Close waits for a snapshot being written.
func (lg *Log) Close() error {
	lg.snapping.Wait()
	return nil
}

var _ node.Storage = (*Log)(nil)
