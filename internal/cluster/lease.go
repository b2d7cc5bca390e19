package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Record is a lease as the lease bucket holds it.
type Record struct {
	Build  string `json:"build"`            // the build's name, as its config spells it
	Holder string `json:"holder,omitempty"` // the process leading the build; "" once released
	Epoch  uint64 `json:"epoch"`            // grows at every takeover
	TTLms  int64  `json:"ttl_ms"`           // the holder's time to live, which standbys wait out
	Config string `json:"config,omitempty"` // the fingerprint of the build's configuration the holder runs
	// AliveMS is when the holder last noted it was running, in room time
	// (Unix ms): a takeover counts the time after it as a pause. It rides
	// on the renewals, which cost a write anyway.
	AliveMS int64 `json:"alive_ms,omitempty"`
	// Since and Renewed are the holder's wall clock, for people: nothing
	// compares them with another clock.
	Since   time.Time `json:"since,omitzero"`
	Renewed time.Time `json:"renewed,omitzero"`
}

// TTL is the holder's time to live.
func (r Record) TTL() time.Duration { return time.Duration(r.TTLms) * time.Millisecond }

// ErrTaken means another process took the lease first.
var ErrTaken = errors.New("another foreman took the lease first")

// Lease is a build's lease, held by this process until it is lost or
// released. Valid is safe from any goroutine: it is the gate every line to
// the room passes.
type Lease struct {
	c     *Cluster
	set   *leaseSet
	build string
	key   string
	ttl   time.Duration

	mu  sync.Mutex
	rec Record
	rev uint64

	until atomic.Int64 // mono nanoseconds until which this process may speak; 0: silent

	lost     chan struct{}
	lostOnce sync.Once
	why      error
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// Acquire takes the build's lease as o last showed it: creates it if there
// was none, or replaces a lapsed or released one by compare-and-set on its
// revision, with the epoch one higher. It fails with ErrTaken when another
// process was quicker.
func (c *Cluster) Acquire(ctx context.Context, build, config string, o Observed) (*Lease, error) {
	return c.acquire(ctx, &c.builds, build, config, o)
}

// AcquireHost takes the lease of the build's host as o last showed it
// (WatchHosts), as Acquire takes a build's: the one host that may speak
// and land for the build, and append to its ledger.
func (c *Cluster) AcquireHost(ctx context.Context, build, config string, o Observed) (*Lease, error) {
	return c.acquire(ctx, &c.hosts, build, config, o)
}

func (c *Cluster) acquire(ctx context.Context, set *leaseSet, build, config string, o Observed) (*Lease, error) {
	if set.kv == nil {
		return nil, fmt.Errorf("this process (role %s) keeps no %s", c.opts.Role, set.bucket)
	}
	key := Key(build)
	now := time.Now().UTC()
	rec := Record{Build: build, Holder: c.opts.ID, Epoch: o.Rec.Epoch + 1, TTLms: c.opts.Lease.Milliseconds(), Config: config,
		AliveMS: o.Rec.AliveMS, Since: now, Renewed: now}
	if o.Absent {
		// The stream comes first: a lease with no stream means that the
		// stream was deleted, never that a leader died before making it.
		if _, err := c.ensureStream(ctx, set, key); err != nil {
			return nil, fmt.Errorf("%s of %s: %w", set.what, build, err)
		}
		epoch, err := c.lastEpoch(ctx, set, key)
		if err != nil {
			return nil, err
		}
		rec.Epoch = max(rec.Epoch, epoch+1)
	}
	data, _ := json.Marshal(rec)
	sent := c.mono()
	var rev uint64
	var err error
	if o.Absent {
		rev, err = set.kv.Create(ctx, key, data)
	} else {
		rev, err = set.kv.Update(ctx, key, data, o.Rev)
	}
	switch {
	case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		return nil, ErrTaken
	case err != nil:
		return nil, c.bucketErr(set, err)
	}
	l := &Lease{c: c, set: set, build: build, key: key, ttl: c.opts.Lease, rec: rec, rev: rev,
		lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	l.extend(sent)
	if c.m != nil {
		c.m.Takeovers.Inc()
		c.m.Held.Inc()
	}
	go l.renewLoop()
	return l, nil
}

// lastEpoch is the epoch of the build's last fence, 0 if none: a lease
// made again (its key deleted by hand) still grows past every earlier one.
func (c *Cluster) lastEpoch(ctx context.Context, set *leaseSet, key string) (uint64, error) {
	s, err := c.js.Stream(ctx, set.prefix+key)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	m, err := s.GetLastMsgForSubject(ctx, set.fence(key))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var epoch uint64
	fmt.Sscan(m.Header.Get(hdrEpoch), &epoch)
	return epoch, nil
}

// bucketErr names a missing lease bucket as what it is.
func (c *Cluster) bucketErr(set *leaseSet, err error) error {
	if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrNoStreamResponse) {
		return &RefusedError{Why: fmt.Sprintf(
			"the lease bucket %s is gone: it was deleted by hand, and %s will not guess who leads which build; stop every %s of this cluster, then make it again with foreman cluster init",
			set.bucket, set.who, set.who)}
	}
	return fmt.Errorf("lease: %w", err)
}

// leasesGone reports whether the lease bucket is known to be gone (a
// renewal that found nobody to answer it).
func (c *Cluster) leasesGone(set *leaseSet) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := c.js.KeyValue(ctx, set.bucket)
	return errors.Is(err, jetstream.ErrBucketNotFound)
}

// extend lets this process speak until the lease could lapse, less the
// margin, counted from when the renewal that succeeded was sent.
func (l *Lease) extend(sent time.Duration) {
	l.until.Store(int64(sent + l.ttl - margin(l.ttl)))
}

// SetConfig notes the fingerprint of the config the holder now runs (after
// a reload); the next renewal stores it, for standbys to compare theirs.
func (l *Lease) SetConfig(fp string) {
	l.mu.Lock()
	l.rec.Config = fp
	l.mu.Unlock()
}

// setAlive notes that the holder runs at t (room time); the next renewal
// stores it.
func (l *Lease) setAlive(t time.Time) {
	l.mu.Lock()
	l.rec.AliveMS = t.UnixMilli()
	l.mu.Unlock()
}

// alive is the latest time a holder of the lease noted it was running.
func (l *Lease) alive() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rec.AliveMS == 0 {
		return time.Time{}
	}
	return time.UnixMilli(l.rec.AliveMS).UTC()
}

// Valid reports whether this process may still speak for the build: it
// holds the lease and is well inside its time to live.
func (l *Lease) Valid() bool {
	u := l.until.Load()
	return u != 0 && int64(l.c.mono()) < u
}

// Build is the build the lease is for.
func (l *Lease) Build() string { return l.build }

// Epoch is the lease's epoch.
func (l *Lease) Epoch() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rec.Epoch
}

// Lost is closed when the lease is lost; Err then says why.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Err is why the lease was lost; nil while it is held.
func (l *Lease) Err() error {
	select {
	case <-l.lost:
		return l.why
	default:
		return nil
	}
}

// lose ends the lease: silent at once, then renewals stop.
func (l *Lease) lose(why error) {
	l.until.Store(0)
	l.lostOnce.Do(func() {
		l.why = why
		close(l.lost)
		if l.c.m != nil {
			l.c.m.Held.Dec()
			if errors.Is(why, ErrDeposed) {
				l.c.m.Deposed.Inc()
			}
		}
	})
	l.stopOnce.Do(func() { close(l.stop) })
}

func (l *Lease) renewLoop() {
	defer close(l.done)
	t := time.NewTicker(renewEvery(l.ttl))
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		l.renew()
	}
}

// renew moves the lease on by compare-and-set. A revision it does not know
// is either its own renewal whose answer was lost (the record still names
// this process and epoch) or another process's takeover: then it is
// deposed. A renewal that keeps failing runs the lease out.
func (l *Lease) renew() {
	if !l.Valid() {
		l.lose(ErrLeaseLost)
		return
	}
	l.mu.Lock()
	rec, rev := l.rec, l.rev
	l.mu.Unlock()
	rec.Renewed = time.Now().UTC()
	data, _ := json.Marshal(rec)
	ctx, cancel := context.WithTimeout(context.Background(), renewEvery(l.ttl))
	defer cancel()
	sent := l.c.mono()
	newRev, err := l.set.kv.Update(ctx, l.key, data, rev)
	switch {
	case err == nil:
		l.mu.Lock()
		l.rev, l.rec.Renewed = newRev, rec.Renewed // not the whole record: an alive mark may have come meanwhile
		l.mu.Unlock()
		select {
		case <-l.stop: // lost or released meanwhile: stay silent
		default:
			l.extend(sent)
		}
		l.c.m.renewal("ok")
		return
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		e, gerr := l.set.kv.Get(ctx, l.key)
		if gerr == nil {
			var cur Record
			if json.Unmarshal(e.Value(), &cur) == nil && cur.Holder == l.c.opts.ID && cur.Epoch == rec.Epoch {
				l.mu.Lock()
				l.rev = e.Revision() // our own renewal landed; its answer did not
				l.mu.Unlock()
				l.c.m.renewal("retry")
				return
			}
		}
		if gerr == nil || errors.Is(gerr, jetstream.ErrKeyNotFound) || errors.Is(gerr, jetstream.ErrKeyDeleted) {
			l.c.m.renewal("deposed")
			l.lose(ErrDeposed)
			return
		}
	case errors.Is(err, jetstream.ErrBucketNotFound), errors.Is(err, jetstream.ErrStreamNotFound):
		l.c.m.renewal("failed")
		l.lose(l.c.bucketErr(l.set, err))
		return
	}
	l.c.m.renewal("failed")
	if l.c.leasesGone(l.set) {
		l.lose(l.c.bucketErr(l.set, jetstream.ErrBucketNotFound))
		return
	}
	l.c.log.Warn().Err(err).Str("build", l.build).Msg("could not renew the lease; trying again")
	if !l.Valid() {
		l.lose(ErrLeaseLost)
	}
}

// Release hands the lease over: this process goes silent first, then the
// record is marked released, so a standby takes it at once instead of
// waiting the lease out.
func (l *Lease) Release(ctx context.Context) error {
	l.until.Store(0)
	l.stopOnce.Do(func() { close(l.stop) })
	<-l.done
	select {
	case <-l.lost:
		return nil // lost already: nothing to hand over
	default:
	}
	l.mu.Lock()
	rec, rev := l.rec, l.rev
	l.mu.Unlock()
	rec.Holder = ""
	rec.Renewed = time.Now().UTC()
	data, _ := json.Marshal(rec)
	_, err := l.set.kv.Update(ctx, l.key, data, rev)
	l.lose(ErrReleased)
	if err != nil {
		return fmt.Errorf("releasing the lease of %s: %w (a standby takes it when it lapses)", l.build, err)
	}
	return nil
}

// ErrReleased is why a lease this process released is no longer held.
var ErrReleased = errors.New("released")
