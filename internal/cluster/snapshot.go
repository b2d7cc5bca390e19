package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentforeman/foreman/internal/node"
)

// pointer names a build's latest snapshot: the object that holds it and
// the index it was taken at. It only ever moves forward, by compare-and-set,
// so a snapshot that arrives late can never replace a newer one.
type pointer struct {
	Object string `json:"object"`
	Index  uint64 `json:"index"`
}

func (c *Cluster) readPointer(ctx context.Context, key string) (pointer, uint64, error) {
	e, err := c.state.Get(ctx, snapKey(key))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return pointer{}, 0, nil
	}
	if err != nil {
		return pointer{}, 0, err
	}
	var p pointer
	if err := json.Unmarshal(e.Value(), &p); err != nil {
		return pointer{}, 0, fmt.Errorf("the snapshot pointer %s does not decode: %w", snapKey(key), err)
	}
	return p, e.Revision(), nil
}

func (c *Cluster) readSnapshot(ctx context.Context, key string) (*node.Snapshot, error) {
	p, _, err := c.readPointer(ctx, key)
	if err != nil || p.Object == "" {
		return nil, err
	}
	data, err := c.snaps.GetBytes(ctx, p.Object)
	if err != nil {
		return nil, &RefusedError{Why: fmt.Sprintf("the snapshot %s of build %s cannot be read (%v), and the log before it is cut: foreman will not guess what it held; restore it, or start over with foreman run --new-build",
			p.Object, key, err)}
	}
	var s node.Snapshot
	if err := json.Unmarshal(data, &s); err != nil || s.Engine == nil {
		return nil, &RefusedError{Why: fmt.Sprintf("the snapshot %s of build %s is damaged; foreman will not guess what it held: restore it, or start over with foreman run --new-build", p.Object, key)}
	}
	return &s, nil
}

// SaveSnapshot stores s in the background: the object, then the pointer,
// then the log's messages it covers are cut. While one is being stored
// another is not started: the next comes later.
func (lg *Log) SaveSnapshot(s *node.Snapshot) error {
	if err := lg.usable(); err != nil {
		return err
	}
	select {
	case lg.busy <- struct{}{}:
	default:
		return nil
	}
	lg.snapping.Add(1)
	go func() {
		defer lg.snapping.Done()
		defer func() { <-lg.busy }()
		began := time.Now()
		err := lg.writeSnapshot(s)
		if lg.Snapshotted != nil {
			lg.Snapshotted(s.Index, time.Since(began), err)
		}
	}()
	return nil
}

func (lg *Log) writeSnapshot(s *node.Snapshot) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("%s/%016x", lg.key, s.Index)
	if _, err := lg.c.snaps.PutBytes(ctx, name, data); err != nil {
		return err
	}
	var old pointer
	for {
		if err := lg.usable(); err != nil {
			_ = lg.c.snaps.Delete(ctx, name)
			return err
		}
		p, rev, err := lg.c.readPointer(ctx, lg.key)
		if err != nil {
			return err
		}
		if p.Index >= s.Index {
			if p.Object != name {
				_ = lg.c.snaps.Delete(ctx, name) // a newer one is there already
			}
			return nil
		}
		val, _ := json.Marshal(pointer{Object: name, Index: s.Index})
		if rev == 0 {
			_, err = lg.c.state.Create(ctx, snapKey(lg.key), val)
		} else {
			_, err = lg.c.state.Update(ctx, snapKey(lg.key), val, rev)
		}
		if err == nil {
			old = p
			break
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return err
		}
	}
	if old.Object != "" && old.Object != name {
		_ = lg.c.snaps.Delete(ctx, old.Object)
	}
	return lg.cut(ctx, s.Index)
}

// cut drops the log's messages whose entries the snapshot at index holds.
func (lg *Log) cut(ctx context.Context, index uint64) error {
	lg.mu.Lock()
	var keep uint64
	i := 0
	for i < len(lg.commits) && lg.commits[i].last <= index {
		keep = lg.commits[i].seq + 1
		i++
	}
	lg.commits = lg.commits[i:]
	lg.mu.Unlock()
	if keep == 0 {
		return nil
	}
	if err := lg.stream.Purge(ctx, jetstream.WithPurgeSubject(logSubject(lg.key)), jetstream.WithPurgeSequence(keep)); err != nil {
		return err
	}
	// The fences of earlier takeovers: only the last one tells anything
	// (the epoch to grow past if the lease is ever made again).
	return lg.stream.Purge(ctx, jetstream.WithPurgeSubject(fenceSubject(lg.key)), jetstream.WithPurgeKeep(1))
}
