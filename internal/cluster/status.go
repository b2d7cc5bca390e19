package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// BuildStatus is one build as the cluster keeps it.
type BuildStatus struct {
	Build   string    `json:"build"`
	Leader  string    `json:"leader,omitempty"` // "" when released
	Epoch   uint64    `json:"epoch"`
	Renewed time.Time `json:"renewed,omitzero"` // the holder's wall clock at its last renewal
	TTL     time.Duration
	Entries uint64   `json:"entries"` // commits in the log since the last snapshot
	Lag     uint64   `json:"lag"`     // operations the slowest replica of the log has yet to apply
	Notes   []string `json:"notes,omitempty"`
}

// Status lists every build the cluster keeps: the leases, and the log
// streams (a stream without a lease, or a lease without a stream, is noted).
func (c *Cluster) Status(ctx context.Context) ([]BuildStatus, error) {
	byKey := map[string]*BuildStatus{}
	recs, err := c.leaseRecords(ctx, &c.builds)
	if err != nil {
		return nil, err
	}
	for k, r := range recs {
		b := &BuildStatus{Build: r.Build, Leader: r.Holder, Epoch: r.Epoch, Renewed: r.Renewed, TTL: r.TTL(), Notes: leaseNotes(r)}
		if b.Build == "" {
			b.Build = k
		}
		byKey[k] = b
	}
	names := c.js.StreamNames(ctx)
	for n := range names.Name() {
		key, ok := strings.CutPrefix(n, streamPrefix)
		if !ok {
			continue
		}
		b := byKey[key]
		if b == nil {
			b = &BuildStatus{Build: key, Notes: []string{"a log without a lease: never led, or its lease was deleted"}}
			byKey[key] = b
		}
		s, err := c.js.Stream(ctx, n)
		if err != nil {
			continue
		}
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(logSubject(key)))
		if err != nil {
			continue
		}
		b.Entries = info.State.Subjects[logSubject(key)]
		if info.Cluster != nil {
			for _, r := range info.Cluster.Replicas {
				b.Lag = max(b.Lag, r.Lag)
				if r.Offline {
					b.Notes = append(b.Notes, "replica "+r.Name+" offline")
				}
			}
		}
	}
	for k, b := range byKey {
		if b.Leader != "" || b.Epoch > 0 {
			if _, err := c.js.Stream(ctx, streamPrefix+k); errors.Is(err, jetstream.ErrStreamNotFound) {
				b.Notes = append(b.Notes, "its log is gone: deleted by hand? a leader will refuse it")
			}
		}
	}
	out := make([]BuildStatus, 0, len(byKey))
	for _, b := range byKey {
		out = append(out, *b)
	}
	return out, nil
}

// leaseRecords reads every lease of set, by key; none when this process
// keeps no such bucket, or it is not there yet.
func (c *Cluster) leaseRecords(ctx context.Context, set *leaseSet) (map[string]Record, error) {
	out := map[string]Record{}
	if set.kv == nil {
		return out, nil
	}
	keys, err := set.kv.ListKeys(ctx)
	if err != nil {
		return nil, c.bucketErr(set, err)
	}
	for k := range keys.Keys() {
		e, err := set.kv.Get(ctx, k)
		if err != nil {
			continue
		}
		var r Record
		if json.Unmarshal(e.Value(), &r) != nil {
			continue
		}
		out[k] = r
	}
	return out, nil
}

// leaseNotes says what is worth knowing of a lease, for people.
func leaseNotes(r Record) []string {
	switch {
	case r.Holder == "":
		return []string{"released: the next standby takes it at once"}
	case time.Since(r.Renewed) > r.TTL():
		return []string{"not renewed for a lease (by this clock): lapsed, or the clocks differ"}
	}
	return nil
}
