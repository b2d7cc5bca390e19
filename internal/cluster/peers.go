package cluster

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Presence is what a process of the pool says of itself, for sharing the
// builds out: never for safety, which is the leases' alone.
type Presence struct {
	Held     int       `json:"held"`
	Capacity int       `json:"capacity"`
	At       time.Time `json:"at"` // its wall clock, for people
}

// Peers follows the processes of the pool: each announces itself every
// half lease, and counts as alive while it keeps doing so.
type Peers struct {
	c    *Cluster
	w    jetstream.KeyWatcher
	mu   sync.Mutex
	seen map[string]peer
}

type peer struct {
	p    Presence
	rev  uint64
	seen time.Duration // mono time of its latest announcement
	gone bool
}

// Peers starts following the pool's processes until ctx ends.
func (c *Cluster) Peers(ctx context.Context) (*Peers, error) {
	kw, err := c.nodes.WatchAll(ctx)
	if err != nil {
		return nil, err
	}
	ps := &Peers{c: c, w: kw, seen: map[string]peer{}}
	go func() {
		for e := range kw.Updates() {
			if e == nil {
				continue
			}
			p := peer{rev: e.Revision(), seen: c.mono(), gone: e.Operation() != jetstream.KeyValuePut}
			if !p.gone && json.Unmarshal(e.Value(), &p.p) != nil {
				p.gone = true
			}
			ps.mu.Lock()
			ps.seen[e.Key()] = p
			ps.mu.Unlock()
		}
	}()
	return ps, nil
}

// Announce says that this process is in the pool, leading held builds of
// at most capacity.
func (ps *Peers) Announce(ctx context.Context, held, capacity int) {
	data, _ := json.Marshal(Presence{Held: held, Capacity: capacity, At: time.Now().UTC()})
	ctx, cancel := context.WithTimeout(ctx, ps.c.opts.Lease/2)
	defer cancel()
	if _, err := ps.c.nodes.Put(ctx, ps.c.opts.ID, data); err != nil {
		ps.c.log.Debug().Err(err).Msg("could not announce this process to the pool")
		return
	}
	ps.mu.Lock()
	p := ps.seen[ps.c.opts.ID]
	p.p, p.seen, p.gone = Presence{Held: held, Capacity: capacity}, ps.c.mono(), false
	ps.seen[ps.c.opts.ID] = p
	ps.mu.Unlock()
}

// alive lists the processes heard from within three leases (they announce
// themselves every half lease; under load an announcement can be late, and
// the count is only for sharing builds out).
func (ps *Peers) alive() map[string]Presence {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	now := ps.c.mono()
	out := map[string]Presence{}
	for id, p := range ps.seen {
		if !p.gone && now-p.seen < 3*ps.c.opts.Lease {
			out[id] = p.p
		}
	}
	return out
}

// Alive counts the processes of the pool alive, this one included.
func (ps *Peers) Alive() int { return max(1, len(ps.alive())) }

// Room is how many more builds the other processes alive could lead.
func (ps *Peers) Room() int {
	n := 0
	for id, p := range ps.alive() {
		if id != ps.c.opts.ID {
			n += max(0, p.Capacity-p.Held)
		}
	}
	return n
}

// Leave says this process left the pool (a clean stop).
func (ps *Peers) Leave() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = ps.c.nodes.Delete(ctx, ps.c.opts.ID)
}

// Stop stops following.
func (ps *Peers) Stop() { _ = ps.w.Stop() }

// Mono is the time since Connect on the monotonic clock, as the watches
// stamp what they see.
func (c *Cluster) Mono() time.Duration { return c.mono() }
