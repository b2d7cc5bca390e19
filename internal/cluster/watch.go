package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Observed is a lease as a standby last saw it, and when, on its own clock.
type Observed struct {
	Rec    Record
	Rev    uint64
	Absent bool          // no lease: the build was never led, or its key was deleted
	Seen   time.Duration // mono time the standby first saw this revision
}

// Watch follows every lease in the cluster: the standby's view, from which
// it tells a lease that lapsed.
type Watch struct {
	c       *Cluster
	w       jetstream.KeyWatcher
	mu      sync.Mutex
	seen    map[string]Observed // by key
	ready   chan struct{}       // closed once the current leases are all read
	changed chan struct{}       // pinged at every change
}

// WatchLeases starts following the builds' leases until ctx ends.
func (c *Cluster) WatchLeases(ctx context.Context) (*Watch, error) {
	return c.watch(ctx, &c.builds)
}

// WatchHosts starts following the hosts' leases until ctx ends: a standby
// host's view, from which it tells that its leader's lease lapsed.
func (c *Cluster) WatchHosts(ctx context.Context) (*Watch, error) {
	return c.watch(ctx, &c.hosts)
}

func (c *Cluster) watch(ctx context.Context, set *leaseSet) (*Watch, error) {
	if set.kv == nil {
		return nil, fmt.Errorf("this process (role %s) keeps no %s", c.opts.Role, set.bucket)
	}
	kw, err := set.kv.WatchAll(ctx)
	if err != nil {
		return nil, c.bucketErr(set, err)
	}
	w := &Watch{c: c, w: kw, seen: map[string]Observed{}, ready: make(chan struct{}), changed: make(chan struct{}, 1)}
	go w.follow()
	return w, nil
}

func (w *Watch) follow() {
	readyOnce := sync.OnceFunc(func() { close(w.ready) })
	for e := range w.w.Updates() {
		if e == nil {
			readyOnce()
			continue
		}
		o := Observed{Rev: e.Revision(), Seen: w.c.mono()}
		if e.Operation() != jetstream.KeyValuePut || json.Unmarshal(e.Value(), &o.Rec) != nil {
			o.Absent = true
		}
		w.mu.Lock()
		if prev, ok := w.seen[e.Key()]; !ok || prev.Rev != o.Rev {
			w.seen[e.Key()] = o
		}
		w.mu.Unlock()
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
	readyOnce()
}

// Ready is closed once the leases that existed when the watch began are
// known.
func (w *Watch) Ready() <-chan struct{} { return w.ready }

// Changed is pinged whenever a lease changes.
func (w *Watch) Changed() <-chan struct{} { return w.changed }

// Lease is what the watch knows of build's lease.
func (w *Watch) Lease(build string) Observed {
	w.mu.Lock()
	defer w.mu.Unlock()
	if o, ok := w.seen[Key(build)]; ok {
		return o
	}
	return Observed{Absent: true}
}

// All is every lease seen, by key.
func (w *Watch) All() map[string]Observed {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]Observed, len(w.seen))
	for k, o := range w.seen {
		out[k] = o
	}
	return out
}

// Free reports whether build's lease may be taken now: there is none, it
// was released, or it has not changed for its holder's whole time to live
// as this process counts it. The compare-and-set in Acquire settles any
// race.
func (w *Watch) Free(build string) (Observed, bool) {
	select {
	case <-w.ready:
	default:
		return Observed{}, false
	}
	o := w.Lease(build)
	switch {
	case o.Absent, o.Rec.Holder == "":
		return o, true
	}
	return o, w.c.mono()-o.Seen >= o.Rec.TTL()
}

// Stop ends the watch.
func (w *Watch) Stop() { _ = w.w.Stop() }
