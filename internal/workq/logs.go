package workq

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/nats-io/nats.go/jetstream"
)

// logChunk is the most a log's message holds: well under NATS's least
// max_payload.
const logChunk = 128 << 10

// PutLog stores file as worker's log name of a job of build: its chunks,
// in order, on the log's own subject, which only that worker's user may
// publish to. What it returns is what the worker signs in its result.
func (q *Queue) PutLog(ctx context.Context, build, job, worker, name, file string) (Log, error) {
	f, err := os.Open(file)
	if err != nil {
		return Log{}, err
	}
	defer f.Close()
	l := Log{Name: name, Subject: LogSubject(build, job, worker, name)}
	sum := sha256.New()
	buf := make([]byte, logChunk)
	for first := true; ; first = false {
		n, rerr := io.ReadFull(f, buf)
		if n == 0 && !first {
			break
		}
		if rerr != nil && !errors.Is(rerr, io.EOF) && !errors.Is(rerr, io.ErrUnexpectedEOF) {
			return Log{}, rerr
		}
		ack, err := q.js.Publish(ctx, l.Subject, buf[:n], jetstream.WithExpectStream(CheckLogStream))
		if err != nil {
			return Log{}, err
		}
		if first {
			l.First = ack.Sequence
		}
		sum.Write(buf[:n])
		l.Size += int64(n)
		if rerr != nil {
			break
		}
	}
	l.SHA256 = hex.EncodeToString(sum.Sum(nil))
	return l, nil
}

// GetLog copies the log l names to file: its chunks from l.First on its
// subject until l.Size bytes, which must hash to l.SHA256.
func (q *Queue) GetLog(ctx context.Context, l Log, file string) error {
	var data bytes.Buffer
	for seq := l.First; seq != 0; {
		m, err := q.logs.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(l.Subject))
		if err != nil {
			return fmt.Errorf("log %s at %d of %d bytes: %w", l.Name, data.Len(), l.Size, err)
		}
		if m.Sequence != seq && data.Len() == 0 {
			return fmt.Errorf("log %s: its first chunk is not at %d", l.Name, l.First)
		}
		data.Write(m.Data)
		if int64(data.Len()) >= l.Size {
			break
		}
		seq = m.Sequence + 1
	}
	if int64(data.Len()) != l.Size {
		return fmt.Errorf("log %s holds %d bytes, not the %d its result says", l.Name, data.Len(), l.Size)
	}
	if sum := sha256.Sum256(data.Bytes()); hex.EncodeToString(sum[:]) != l.SHA256 {
		return fmt.Errorf("log %s is not what its result says (its SHA-256 differs)", l.Name)
	}
	return os.WriteFile(file, data.Bytes(), 0o644)
}
