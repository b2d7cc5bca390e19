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

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// LogChunk is the most a log's message holds: well under NATS's least
// max_payload.
const LogChunk = 128 << 10

// LogChunks is how many chunks of logs each worker may hold in the log
// stream at once (its subject's limit, LogSubject): LogChunks*LogChunk
// bytes, 64 MiB. Past it the server refuses the worker's next chunk (the
// job is one it could not do: tried again elsewhere) until its oldest age
// out (logTTL). A worker cannot flood the stream, nor push another's
// logs out.
const LogChunks = 512

// PutLog stores file as worker's log name of a job of build: its chunks,
// in order, on the worker's own log subject, which only that worker's
// user may publish to, each naming its log. What it returns is what the
// worker signs in its result.
func (q *Queue) PutLog(ctx context.Context, build, job, worker, name, file string) (Log, error) {
	f, err := os.Open(file)
	if err != nil {
		return Log{}, err
	}
	defer f.Close()
	l := Log{Name: name, Subject: LogSubject(worker)}
	of := LogOf(build, job, name)
	sum := sha256.New()
	buf := make([]byte, LogChunk)
	for first := true; ; first = false {
		n, rerr := io.ReadFull(f, buf)
		if n == 0 && !first {
			break
		}
		if rerr != nil && !errors.Is(rerr, io.EOF) && !errors.Is(rerr, io.ErrUnexpectedEOF) {
			return Log{}, rerr
		}
		m := nats.NewMsg(l.Subject)
		m.Data = buf[:n]
		m.Header.Set(LogHeader, of)
		ack, err := q.js.PublishMsg(ctx, m, jetstream.WithExpectStream(CheckLogStream))
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

// GetLog copies the log l of a job of build names to file: its chunks
// from l.First on its subject (those that name it: a worker's logs share
// its subject) until l.Size bytes, which must hash to l.SHA256.
func (q *Queue) GetLog(ctx context.Context, build, job string, l Log, file string) error {
	of := LogOf(build, job, l.Name)
	var data bytes.Buffer
	for seq, n := l.First, 0; seq != 0; n++ {
		if n > LogChunks*2 {
			return fmt.Errorf("log %s: its chunks are not within the worker's %d", l.Name, LogChunks)
		}
		m, err := q.logs.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(l.Subject))
		if err != nil {
			return fmt.Errorf("log %s at %d of %d bytes: %w", l.Name, data.Len(), l.Size, err)
		}
		if m.Sequence != seq && data.Len() == 0 {
			return fmt.Errorf("log %s: its first chunk is not at %d", l.Name, l.First)
		}
		seq = m.Sequence + 1
		if m.Header.Get(LogHeader) != of {
			if data.Len() == 0 {
				return fmt.Errorf("log %s: the chunk at %d is another log's", l.Name, l.First)
			}
			continue // another log of the worker's, written meanwhile
		}
		data.Write(m.Data)
		if int64(data.Len()) >= l.Size {
			break
		}
	}
	if int64(data.Len()) != l.Size {
		return fmt.Errorf("log %s holds %d bytes, not the %d its result says", l.Name, data.Len(), l.Size)
	}
	if sum := sha256.Sum256(data.Bytes()); hex.EncodeToString(sum[:]) != l.SHA256 {
		return fmt.Errorf("log %s is not what its result says (its SHA-256 differs)", l.Name)
	}
	return os.WriteFile(file, data.Bytes(), 0o644)
}
