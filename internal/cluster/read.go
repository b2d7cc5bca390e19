package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentforeman/foreman/internal/journal"
	"github.com/agentforeman/foreman/internal/node"
)

// Entries reads the stream from its first message to the fence, calling fn
// with every entry after index after.
func (lg *Log) Entries(after uint64, fn func(node.Entry) error) error {
	return lg.each(func(seq uint64, data []byte) error { return lg.read(seq, data, after, fn) })
}

// each calls fn with every record message of the stream, from its first
// to the fence, oldest first. A short stream is read a message at a time;
// a long one (a busy build since its last snapshot) in batches, so that a
// takeover costs a few round trips, not one per message.
func (f *fenced) each(fn func(seq uint64, data []byte) error) error {
	first := max(f.first, 1)
	subject := f.lease.set.records(f.key)
	if f.last-first <= directReads {
		for seq := first; seq < f.last; seq++ {
			m, err := f.stream.GetMsg(context.Background(), seq)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				continue // cut by a snapshot, or compacted
			}
			if err != nil {
				return fmt.Errorf("reading %s of %s at %d: %w", f.lease.set.what, f.build, seq, err)
			}
			if m.Subject != subject {
				continue
			}
			if err := fn(seq, m.Data); err != nil {
				return err
			}
		}
		return nil
	}
	return f.batches(first, subject, fn)
}

// directReads is the longest stream read a message at a time.
const directReads = 32

// batches reads the stream's messages from first to the fence through an
// ordered consumer, a few hundred a request.
func (f *fenced) batches(first uint64, subject string, fn func(seq uint64, data []byte) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	what := f.lease.set.what + " of " + f.build
	cons, err := f.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy, OptStartSeq: first,
	})
	if err != nil {
		return fmt.Errorf("reading %s: %w", what, err)
	}
	for {
		batch, err := cons.FetchNoWait(512)
		if err != nil {
			return fmt.Errorf("reading %s: %w", what, err)
		}
		got, done := 0, false
		for m := range batch.Messages() {
			md, err := m.Metadata()
			if err != nil {
				return fmt.Errorf("reading %s: %w", what, err)
			}
			got++
			if md.Sequence.Stream >= f.last {
				done = true
				continue
			}
			if err := fn(md.Sequence.Stream, m.Data()); err != nil {
				return err
			}
			done = md.NumPending == 0
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return fmt.Errorf("reading %s: %w", what, err)
		}
		if done || got == 0 {
			return nil
		}
	}
}

// read decodes the commit in message seq and hands its entries after
// index after to fn.
func (lg *Log) read(seq uint64, data []byte, after uint64, fn func(node.Entry) error) error {
	var last uint64
	for rec := range bytes.SplitSeq(data, []byte{'\n'}) {
		e, err := journal.DecodeEntry(rec)
		if err != nil {
			return &RefusedError{Why: fmt.Sprintf("the log of %s (stream %s) is damaged at message %d: %v; foreman will not guess what it held: restore it, or start over with foreman run --new-build",
				lg.build, lg.name, seq, err)}
		}
		last = e.Index
		if e.Index > after {
			if err := fn(e); err != nil {
				return err
			}
		}
	}
	lg.mu.Lock()
	lg.commits = append(lg.commits, commit{seq: seq, last: last})
	lg.mu.Unlock()
	return nil
}
