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
	c         *Cluster
	set       *leaseSet
	mu        sync.Mutex
	w         jetstream.KeyWatcher // the current one: a reconnect starts another
	stopped   bool
	seen      map[string]Observed // by key
	ready     chan struct{}       // closed once the current leases are all read
	readyOnce sync.Once
	changed   chan struct{} // pinged at every change
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
	reconnected := c.reconnects()
	kw, err := set.kv.WatchAll(ctx)
	if err != nil {
		return nil, c.bucketErr(set, err)
	}
	w := &Watch{c: c, set: set, w: kw, seen: map[string]Observed{}, ready: make(chan struct{}), changed: make(chan struct{}, 1)}
	go w.follow(kw, nil)
	go w.rewatch(ctx, reconnected)
	return w, nil
}

// rewatch starts the watch again after every reconnect to NATS: a restarted
// server may have lost the watch's consumer, which the client would notice
// only once its heartbeats had been missed for seconds, and a standby
// would meanwhile see no lease change. A lease that did not change keeps
// the time it was first seen, so its lapse is counted on as before; one
// deleted meanwhile is absent.
func (w *Watch) rewatch(ctx context.Context, reconnected <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-reconnected:
		}
		reconnected = w.c.reconnects()
		kw, err := w.set.kv.WatchAll(ctx)
		if err != nil {
			w.c.log.Debug().Err(err).Str("bucket", w.set.bucket).Msg("could not watch the leases again after a reconnect; the old watch goes on")
			continue
		}
		w.mu.Lock()
		if w.stopped {
			w.mu.Unlock()
			_ = kw.Stop()
			return
		}
		old := w.w
		w.w = kw
		w.mu.Unlock()
		_ = old.Stop()
		go w.follow(kw, map[string]bool{})
	}
}

// follow keeps what kw says, while it is the current watcher. fresh, for a
// watch started again, collects the keys its first values name: the others
// were deleted meanwhile.
func (w *Watch) follow(kw jetstream.KeyWatcher, fresh map[string]bool) {
	for e := range kw.Updates() {
		w.mu.Lock()
		if w.w != kw {
			w.mu.Unlock()
			return // replaced
		}
		if e == nil {
			for k, o := range w.seen {
				if fresh != nil && !fresh[k] && !o.Absent {
					w.seen[k] = Observed{Absent: true, Rev: o.Rev, Seen: w.c.mono()}
				}
			}
			fresh = nil
			w.mu.Unlock()
			w.readyOnce.Do(func() { close(w.ready) })
			continue
		}
		if fresh != nil {
			fresh[e.Key()] = true
		}
		o := Observed{Rev: e.Revision(), Seen: w.c.mono()}
		if e.Operation() != jetstream.KeyValuePut || json.Unmarshal(e.Value(), &o.Rec) != nil {
			o.Absent = true
		}
		if prev, ok := w.seen[e.Key()]; !ok || prev.Rev != o.Rev {
			w.seen[e.Key()] = o
		}
		w.mu.Unlock()
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
	w.mu.Lock()
	current := w.w == kw
	w.mu.Unlock()
	if current {
		w.readyOnce.Do(func() { close(w.ready) })
	}
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
func (w *Watch) Stop() {
	w.mu.Lock()
	w.stopped = true
	kw := w.w
	w.mu.Unlock()
	_ = kw.Stop()
}
