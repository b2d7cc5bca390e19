package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// DefaultLease is a lease's time to live unless cluster.lease sets one: a
// standby takes a dead leader's builds over this long after its last
// renewal, which keeps failover (with restoring and joining the room)
// within five seconds.
const DefaultLease = 3 * time.Second

// Options configure a connection to the cluster. URL is required.
type Options struct {
	URL      string        // one or more nats:// URLs, comma-separated
	ID       string        // this process's name in the cluster; default host-pid
	Role     Role          // what this process does; default RoleForeman
	Auth     Auth          // how it signs in, and TLS
	Lease    time.Duration // the time to live of the leases this process takes; default DefaultLease
	Replicas int           // copies JetStream keeps of each stream and bucket; default 1
	Logger   zerolog.Logger
	Metrics  *Metrics // nil: none kept
	// Init creates the lease bucket even where the streams it guards exist
	// already (foreman cluster init): the operator's word that it was
	// deleted by hand and may be made again.
	Init bool
}

// Cluster is one process's connection to the cluster's JetStream.
type Cluster struct {
	opts      Options
	nc        *nats.Conn
	js        jetstream.JetStream
	builds    leaseSet // foreman's leases, and the builds' logs they guard
	hosts     leaseSet // the hosts' leases, and the ledgers they guard
	state     jetstream.KeyValue
	nodes     jetstream.KeyValue
	hostNodes jetstream.KeyValue
	snaps     jetstream.ObjectStore
	start     time.Time // the origin of mono: its monotonic reading is what counts
	log       zerolog.Logger
	m         *Metrics

	rmu    sync.Mutex
	reconn chan struct{} // closed at the next reconnect to NATS
}

// leaseSet is a bucket of leases and the fenced streams they guard, one of
// each per build: foreman's (a build's log) or the hosts' (a build's host
// ledger). Both are held, renewed, fenced and taken over the same way.
type leaseSet struct {
	kv      jetstream.KeyValue
	bucket  string
	prefix  string                  // of the streams' names
	records func(key string) string // the subject of a stream's records
	fence   func(key string) string // the subject of its fences
	who     string                  // who leads: "foreman", "foreman host"
	what    string                  // what the stream is: "the log", "the host's ledger"
}

func buildSet() leaseSet {
	return leaseSet{bucket: LeaseBucket, prefix: streamPrefix, records: logSubject, fence: fenceSubject,
		who: "foreman", what: "the log"}
}

func hostSet() leaseSet {
	return leaseSet{bucket: HostLeaseBucket, prefix: ledgerPrefix, records: ledgerSubject, fence: ledgerFence,
		who: "foreman host", what: "the host's ledger"}
}

// Errors that refuse to go on: each says what was lost and what to do.
var (
	// ErrDeposed: another foreman has taken the build over.
	ErrDeposed = errors.New("another foreman has taken this build over (its fence is in the log); this one stops at once")
	// ErrLeaseLost: the lease could not be renewed in time, so another
	// foreman may take the build over; this one has gone silent.
	ErrLeaseLost = errors.New("could not renew the lease in time; this foreman has gone silent, and a standby may take the build over")
)

// RefusedError is the cluster refusing to guess: something foreman keeps in
// JetStream is missing, and going on would mean inventing it.
type RefusedError struct{ Why string }

func (e *RefusedError) Error() string { return e.Why }

// Connect connects to NATS (Dial), checks that JetStream is there, and
// opens (or, on a new cluster, creates) the buckets its role keeps.
func Connect(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.ID == "" {
		opts.ID = DefaultID()
	}
	if opts.Role == "" {
		opts.Role = RoleForeman
	}
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	if opts.Replicas <= 0 {
		opts.Replicas = 1
	}
	nc, err := Dial(opts)
	if err != nil {
		return nil, err
	}
	c := &Cluster{opts: opts, nc: nc, builds: buildSet(), hosts: hostSet(), start: time.Now(), log: opts.Logger, m: opts.Metrics,
		reconn: make(chan struct{})}
	nc.SetReconnectHandler(func(*nats.Conn) { c.reconnected() })
	if c.js, err = jetstream.New(nc, jetstream.WithDefaultTimeout(5*time.Second)); err != nil {
		nc.Close()
		return nil, err
	}
	if err := c.open(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) open(ctx context.Context) error {
	if _, err := ask(ctx, c.js.AccountInfo); err != nil {
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
			return fmt.Errorf("the NATS server at %s has no JetStream: start it with -js (nats-server -js -sd DIR)", c.opts.URL)
		}
		return fmt.Errorf("JetStream at %s: %w", c.opts.URL, err)
	}
	var err error
	switch c.opts.Role {
	case RoleForeman:
		if err := c.openLeases(ctx, &c.builds); err != nil {
			return err
		}
		if c.state, err = c.bucket(ctx, StateBucket); err != nil {
			return fmt.Errorf("%s: %w", StateBucket, err)
		}
		if c.nodes, err = c.bucket(ctx, NodeBucket); err != nil {
			return fmt.Errorf("%s: %w", NodeBucket, err)
		}
		c.snaps, err = ensure(ctx,
			func(ctx context.Context) (jetstream.ObjectStore, error) { return c.js.ObjectStore(ctx, SnapshotBucket) },
			func(ctx context.Context) (jetstream.ObjectStore, error) {
				return c.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: SnapshotBucket,
					Storage: jetstream.FileStorage, Replicas: c.opts.Replicas})
			}, jetstream.ErrBucketNotFound, jetstream.ErrBucketExists)
		if err != nil {
			return fmt.Errorf("%s: %w", SnapshotBucket, err)
		}
	case RoleHost:
		if err := c.openLeases(ctx, &c.hosts); err != nil {
			return err
		}
		if c.hostNodes, err = c.bucketTTL(ctx, HostNodeBucket, presenceTTL); err != nil {
			return fmt.Errorf("%s: %w", HostNodeBucket, err)
		}
	case RoleReader:
		// A reader makes nothing: what is not there yet is empty.
		for _, b := range []struct {
			kv   *jetstream.KeyValue
			name string
		}{{&c.builds.kv, LeaseBucket}, {&c.hosts.kv, HostLeaseBucket}, {&c.hostNodes, HostNodeBucket}} {
			kv, err := ask(ctx, c.lookBucket(b.name))
			if err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
				return fmt.Errorf("%s: %w", b.name, err)
			}
			*b.kv = kv
		}
	}
	return nil
}

// openLeases opens a lease bucket, or makes it on a new cluster; it
// refuses to make it again where streams it guards exist (it was deleted
// by hand), unless the operator said so (Init).
func (c *Cluster) openLeases(ctx context.Context, set *leaseSet) error {
	var err error
	if set.kv, err = ask(ctx, c.lookBucket(set.bucket)); errors.Is(err, jetstream.ErrBucketNotFound) {
		if !c.opts.Init {
			if name, ok := c.anyStream(ctx, set.prefix); ok {
				return &RefusedError{Why: fmt.Sprintf(
					"the lease bucket %s is missing, but stream %s holds %s of a build: it was deleted by hand, and %s will not guess who leads which build; stop every %s of this cluster, then make it again with foreman cluster init",
					set.bucket, name, set.what, set.who, set.who)}
			}
		}
		set.kv, err = c.bucket(ctx, set.bucket)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", set.bucket, err)
	}
	return nil
}

// bucket opens a KV bucket, creating it if it is not there yet (another
// process may be creating it at the same moment).
func (c *Cluster) bucket(ctx context.Context, name string) (jetstream.KeyValue, error) {
	return c.bucketTTL(ctx, name, 0)
}

// bucketTTL is bucket, whose keys expire after ttl (0: never).
func (c *Cluster) bucketTTL(ctx context.Context, name string, ttl time.Duration) (jetstream.KeyValue, error) {
	return ensure(ctx, c.lookBucket(name), func(ctx context.Context) (jetstream.KeyValue, error) {
		return c.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: name, History: 1, TTL: ttl,
			Storage: jetstream.FileStorage, Replicas: c.opts.Replicas})
	}, jetstream.ErrBucketNotFound, jetstream.ErrBucketExists)
}

// lookBucket is the request that opens the KV bucket name.
func (c *Cluster) lookBucket(name string) func(context.Context) (jetstream.KeyValue, error) {
	return func(ctx context.Context) (jetstream.KeyValue, error) { return c.js.KeyValue(ctx, name) }
}

// anyStream names a stream whose name starts with prefix, if there is one.
func (c *Cluster) anyStream(ctx context.Context, prefix string) (string, bool) {
	names := c.js.StreamNames(ctx)
	for n := range names.Name() {
		if strings.HasPrefix(n, prefix) {
			return n, true
		}
	}
	return "", false
}

// reconnects is closed at the next reconnect to NATS.
func (c *Cluster) reconnects() <-chan struct{} {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	return c.reconn
}

func (c *Cluster) reconnected() {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	close(c.reconn)
	c.reconn = make(chan struct{})
}

// JetStream is the connection's JetStream, for what a role keeps beside
// the leases (the workers' queue, results and logs: names.go). It answers
// to the role's own inbox.
func (c *Cluster) JetStream() jetstream.JetStream { return c.js }

// ID is this process's name in the cluster.
func (c *Cluster) ID() string { return c.opts.ID }

// LeaseTTL is the time to live of the leases this process takes.
func (c *Cluster) LeaseTTL() time.Duration { return c.opts.Lease }

// Close closes the connection (leases held lapse unless released first).
func (c *Cluster) Close() { c.nc.Close() }

// mono is the time since Connect on the monotonic clock: what the lease's
// deadlines are counted on, immune to the wall clock being set.
func (c *Cluster) mono() time.Duration { return time.Since(c.start) }

// renewEvery and margin derive from a lease's time to live: renew four
// times per life, and go silent a third of a life before the lease could
// lapse, so that one slow renewal, a clock that runs a little slow and the
// last line on its way to the room all fit before a standby may speak.
func renewEvery(ttl time.Duration) time.Duration { return ttl / 4 }
func margin(ttl time.Duration) time.Duration     { return ttl / 3 }

// DefaultID is a process's name in the cluster when cluster.id does not
// set one: its host's name (as a KV key holds it) and its process id.
func DefaultID() string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r < 0x80 && (r == '-' || r == '.' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return r
		}
		return '-'
	}, host)
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}
