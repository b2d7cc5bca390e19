package cluster

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Ledger is a build's host ledger in its stream (FOREMAN_LEDGER_<key>): the
// records foreman host makes durable before it says or lands anything,
// appended by the host holding the build's host lease alone. It is fenced
// as a build's log is (fenced.go): once a standby host has taken the build
// over, the deposed host's next append fails, and it goes silent.
type Ledger struct {
	fenced
}

// OpenLedger fences the build's ledger for the host holding l, making the
// stream if it is not there. A ledger deleted by hand is made again empty,
// as the file ledger is: what passed is then checked again, and the room
// says what is owed.
func (c *Cluster) OpenLedger(ctx context.Context, l *Lease) (*Ledger, error) {
	if l.set != &c.hosts {
		return nil, fmt.Errorf("a ledger is kept under a host's lease, not a build's")
	}
	lg := &Ledger{fenced: c.newFenced(l)}
	lg.gone = func() error {
		return &RefusedError{Why: fmt.Sprintf(
			"the host's ledger of build %s (stream %s) is gone: it was deleted by hand while this host led the build; this host stops leading it (the next to lead starts it afresh, and checks again what passed)",
			lg.build, lg.name)}
	}
	s, err := c.ensureStream(ctx, &c.hosts, l.key)
	if err != nil {
		return nil, fmt.Errorf("the host's ledger of %s: %w", l.build, err)
	}
	lg.stream = s
	if err := lg.fence(ctx); err != nil {
		return nil, err
	}
	return lg, nil
}

// Records calls fn with every message of records, oldest first, up to the
// fence this host put.
func (lg *Ledger) Records(fn func(data []byte) error) error {
	return lg.each(func(_ uint64, data []byte) error { return fn(data) })
}

// MaxMessage is the most one message may carry.
func (lg *Ledger) MaxMessage() int { return lg.maxBody() }

// Append appends one message of records.
func (lg *Ledger) Append(data []byte) error {
	if err := lg.usable(); err != nil {
		return err
	}
	if len(data) > lg.maxBody() {
		return fmt.Errorf("a batch of %d bytes is more than one NATS message may hold (%d): raise max_payload in the NATS server's config", len(data), lg.maxBody())
	}
	_, err := lg.publish(data)
	return err
}

// Compact appends msgs, which hold all that the records before them told,
// then drops those: the stream keeps what is live, as the file ledger is
// rewritten when it grows. Only this holder appends, so nothing can come
// between what it read and what it writes.
func (lg *Ledger) Compact(ctx context.Context, msgs [][]byte) error {
	var from uint64
	for i, m := range msgs {
		if err := lg.Append(m); err != nil {
			return err
		}
		if i == 0 {
			from = lg.last
		}
	}
	if from == 0 {
		return nil
	}
	if err := lg.stream.Purge(ctx, jetstream.WithPurgeSubject(ledgerSubject(lg.key)), jetstream.WithPurgeSequence(from)); err != nil {
		return fmt.Errorf("compacting the host's ledger of %s: %w", lg.build, err)
	}
	// The fences of earlier takeovers: only the last one tells anything.
	return lg.stream.Purge(ctx, jetstream.WithPurgeSubject(ledgerFence(lg.key)), jetstream.WithPurgeKeep(1))
}

// Build is the build whose ledger this is.
func (lg *Ledger) Build() string { return lg.build }

// Name is the ledger's stream.
func (lg *Ledger) Name() string { return lg.name }
