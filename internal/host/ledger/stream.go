package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentforeman/foreman/internal/cluster"
	"github.com/agentforeman/foreman/internal/host"
)

// Stream is the host's ledger in JetStream (with cluster.nats set): the
// same records as the file holds, a batch a message, in the build's ledger
// stream. Only the host that holds the build's host lease appends, and
// every append expects the stream's last sequence (cluster.Ledger), so a
// host a standby took the build from fails its next append and says and
// lands nothing more.
type Stream struct {
	lg *cluster.Ledger
}

// compactStreamAt is the count of messages past which OpenStream writes
// what is live again and drops the rest.
const compactStreamAt = 1000

// OpenStream reads the ledger lg holds (fenced for this host already): the
// state it leaves, as Open reads the file.
func OpenStream(ctx context.Context, lg *cluster.Ledger) (*Stream, host.State, error) {
	var rp host.Replay
	msgs := 0
	err := lg.Records(func(data []byte) error {
		msgs++
		for line := range bytes.SplitSeq(data, []byte{'\n'}) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var rec host.Record
			if err := json.Unmarshal(line, &rec); err != nil || rec.Op == "" {
				return &cluster.RefusedError{Why: fmt.Sprintf(
					"the host's ledger of build %s (stream %s) holds a damaged record in its message %d; delete the stream to start afresh (what passed will be checked again)",
					lg.Build(), lg.Name(), msgs)}
			}
			rp.Apply(rec)
		}
		return nil
	})
	if err != nil {
		return nil, host.State{}, err
	}
	st := rp.State()
	s := &Stream{lg: lg}
	if msgs > compactStreamAt {
		msgs, err := s.encode(host.Compacted(st))
		if err == nil {
			err = lg.Compact(ctx, msgs)
		}
		if err != nil {
			return nil, host.State{}, err
		}
	}
	return s, st, nil
}

// Append makes records durable: one message, or several when they do not
// fit in one (each stored before the next, as the file's batch is written
// before it is synced).
func (s *Stream) Append(recs []host.Record) error {
	if len(recs) == 0 {
		return nil
	}
	msgs, err := s.encode(recs)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if err := s.lg.Append(m); err != nil {
			return err
		}
	}
	return nil
}

// encode puts records a line each into as few messages as hold them.
func (s *Stream) encode(recs []host.Record) ([][]byte, error) {
	limit := s.lg.MaxMessage()
	var out [][]byte
	var cur []byte
	for _, r := range recs {
		line, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		if len(line)+1 > limit {
			return nil, fmt.Errorf("a ledger record of %d bytes is more than one NATS message may hold (%d): raise max_payload in the NATS server's config", len(line), limit)
		}
		if len(cur)+len(line)+1 > limit {
			out = append(out, cur)
			cur = nil
		}
		cur = append(append(cur, line...), '\n')
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out, nil
}
