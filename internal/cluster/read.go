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
// with every entry after index after. A short log is read a message at a
// time; a long one (a busy build since its last snapshot) in batches, so
// that a takeover costs a few round trips, not one per commit.
func (lg *Log) Entries(after uint64, fn func(node.Entry) error) error {
	first := max(lg.first, 1)
	if lg.last-first <= directReads {
		for seq := first; seq < lg.last; seq++ {
			m, err := lg.stream.GetMsg(context.Background(), seq)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				continue // cut by a snapshot
			}
			if err != nil {
				return fmt.Errorf("reading the log of %s at %d: %w", lg.build, seq, err)
			}
			if m.Subject != logSubject(lg.key) {
				continue
			}
			if err := lg.read(seq, m.Data, after, fn); err != nil {
				return err
			}
		}
		return nil
	}
	return lg.batches(first, after, fn)
}

// directReads is the longest log read a message at a time.
const directReads = 32

// batches reads the log's messages from first to the fence through an
// ordered consumer, a few hundred a request.
func (lg *Log) batches(first, after uint64, fn func(node.Entry) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cons, err := lg.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{logSubject(lg.key)},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy, OptStartSeq: first,
	})
	if err != nil {
		return fmt.Errorf("reading the log of %s: %w", lg.build, err)
	}
	for {
		batch, err := cons.FetchNoWait(512)
		if err != nil {
			return fmt.Errorf("reading the log of %s: %w", lg.build, err)
		}
		got, done := 0, false
		for m := range batch.Messages() {
			md, err := m.Metadata()
			if err != nil {
				return fmt.Errorf("reading the log of %s: %w", lg.build, err)
			}
			got++
			if md.Sequence.Stream >= lg.last {
				done = true
				continue
			}
			if err := lg.read(md.Sequence.Stream, m.Data(), after, fn); err != nil {
				return err
			}
			done = md.NumPending == 0
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return fmt.Errorf("reading the log of %s: %w", lg.build, err)
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
				lg.build, streamPrefix+lg.key, seq, err)}
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
