package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentforeman/foreman/internal/journal"
	"github.com/agentforeman/foreman/internal/node"
)

// Log is a build's log in its stream: node.Storage for a foreman that holds
// the build's lease. It is fenced (fenced.go): once another process has
// fenced the stream, the next append fails and the log refuses everything
// after.
type Log struct {
	fenced
	snap  *node.Snapshot
	alive time.Time

	mu      sync.Mutex
	commits []commit // commits since the last purge: where a snapshot lets the log be cut

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
	lg := &Log{fenced: c.newFenced(l), busy: make(chan struct{}, 1)}
	lg.gone = func() error {
		return &RefusedError{Why: fmt.Sprintf(
			"the log of build %s (stream %s) is gone: it was deleted by hand while this foreman led the build; foreman will not guess what it held: restore it, or start over with foreman run --new-build",
			lg.build, lg.name)}
	}
	name := lg.name
	if newBuild {
		if err := c.js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("starting %s over: %w", l.build, err)
		}
		_ = c.state.Purge(ctx, snapKey(l.key))
	}
	s, err := c.js.Stream(ctx, name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound) && (newBuild || lg.epoch == 1):
		s, err = c.ensureStream(ctx, &c.builds, l.key)
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

// Snapshot is the latest snapshot, as read at open.
func (lg *Log) Snapshot() (*node.Snapshot, error) { return lg.snap, nil }

// Append adds entries as one message, expecting the stream's last sequence
// to be this leader's last (fenced.publish). A commit larger than NATS
// takes in one message goes as several, each stored before the next (as
// the journal writes a large batch), and no reply leaves before all.
func (lg *Log) Append(entries []node.Entry) error {
	if err := lg.usable(); err != nil {
		return err
	}
	limit := lg.maxBody()
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
	seq, err := lg.fenced.publish(body)
	if err != nil {
		return err
	}
	lg.mu.Lock()
	lg.commits = append(lg.commits, commit{seq: seq, last: last})
	lg.mu.Unlock()
	return nil
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
