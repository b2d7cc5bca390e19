package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The hosts of the cluster: foreman host processes, one leading each build
// (it holds the build's host lease, in HostLeaseBucket) and any number
// standing by for it. Only the leader is in the room and appends to the
// build's host ledger; a standby waits for its lease to lapse or be
// released, as a standby foreman waits for a build's.

// Host states, as a host process announces them.
const (
	HostLeading = "leading"
	HostStandby = "standby"
)

// presenceTTL is how long a host process's word that it runs lasts: it
// says it again every half lease, so one gone quiet drops off the list.
const presenceTTL = time.Minute

// HostPresence is what a host process says of itself: the build it is
// for, and whether it leads it or stands by.
type HostPresence struct {
	Build string    `json:"build"`
	State string    `json:"state"`
	At    time.Time `json:"at"` // its wall clock, for people
}

// AnnounceHost says that this process is a host of build, leading it or
// standing by (state); for foreman cluster status only, never for safety.
func (c *Cluster) AnnounceHost(ctx context.Context, build, state string) {
	if c.hostNodes == nil {
		return
	}
	data, _ := json.Marshal(HostPresence{Build: build, State: state, At: time.Now().UTC()})
	ctx, cancel := context.WithTimeout(ctx, c.opts.Lease/2)
	defer cancel()
	if _, err := c.hostNodes.Put(ctx, c.opts.ID, data); err != nil {
		c.log.Debug().Err(err).Msg("could not announce this host")
	}
}

// LeaveHost says that this process stopped (a clean stop).
func (c *Cluster) LeaveHost() {
	if c.hostNodes == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.hostNodes.Delete(ctx, c.opts.ID)
}

// HostStatus is one build's hosts as the cluster keeps them.
type HostStatus struct {
	Build    string    `json:"build"`
	Leader   string    `json:"leader,omitempty"` // "" when released
	Epoch    uint64    `json:"epoch"`
	Renewed  time.Time `json:"renewed,omitzero"` // the holder's wall clock at its last renewal
	TTL      time.Duration
	Records  uint64   `json:"records"`  // messages in the host's ledger
	Standbys []string `json:"standbys"` // the processes standing by for it
	Notes    []string `json:"notes,omitempty"`
}

// Hosts lists every build's hosts: the host leases, the processes that
// announced themselves, and the ledgers.
func (c *Cluster) Hosts(ctx context.Context) ([]HostStatus, error) {
	byKey := map[string]*HostStatus{}
	get := func(key, build string) *HostStatus {
		h := byKey[key]
		if h == nil {
			h = &HostStatus{Build: build}
			byKey[key] = h
		}
		return h
	}
	recs, err := c.leaseRecords(ctx, &c.hosts)
	if err != nil {
		return nil, err
	}
	for k, r := range recs {
		h := get(k, r.Build)
		h.Leader, h.Epoch, h.Renewed, h.TTL = r.Holder, r.Epoch, r.Renewed, r.TTL()
		h.Notes = append(h.Notes, leaseNotes(r)...)
	}
	if c.hostNodes != nil {
		keys, err := c.hostNodes.ListKeys(ctx)
		if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
			return nil, fmt.Errorf("%s: %w", HostNodeBucket, err)
		}
		if err == nil {
			for id := range keys.Keys() {
				e, err := c.hostNodes.Get(ctx, id)
				if err != nil {
					continue
				}
				var p HostPresence
				if json.Unmarshal(e.Value(), &p) != nil || p.State != HostStandby || time.Since(p.At) > presenceTTL {
					continue
				}
				h := get(Key(p.Build), p.Build)
				h.Standbys = append(h.Standbys, id)
			}
		}
	}
	names := c.js.StreamNames(ctx)
	for n := range names.Name() {
		key, ok := strings.CutPrefix(n, ledgerPrefix)
		if !ok {
			continue
		}
		h := byKey[key]
		if h == nil {
			h = get(key, key)
			h.Notes = append(h.Notes, "a ledger without a lease: its host never led, or the lease was deleted")
		}
		s, err := c.js.Stream(ctx, n)
		if err != nil {
			continue
		}
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(ledgerSubject(key)))
		if err == nil {
			h.Records = info.State.Subjects[ledgerSubject(key)]
		}
	}
	out := make([]HostStatus, 0, len(byKey))
	for _, h := range byKey {
		sort.Strings(h.Standbys)
		out = append(out, *h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Build < out[j].Build })
	return out, nil
}
