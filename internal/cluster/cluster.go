package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
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
	Lease    time.Duration // the time to live of the leases this process takes; default DefaultLease
	Replicas int           // copies JetStream keeps of each stream and bucket; default 1
	Logger   zerolog.Logger
	Metrics  *Metrics // nil: none kept
	// Init creates the lease bucket even where builds' logs exist already
	// (foreman cluster init): the operator's word that it was deleted by
	// hand and may be made again.
	Init bool
}

// Cluster is one process's connection to the cluster's JetStream.
type Cluster struct {
	opts   Options
	nc     *nats.Conn
	js     jetstream.JetStream
	leases jetstream.KeyValue
	state  jetstream.KeyValue
	nodes  jetstream.KeyValue
	snaps  jetstream.ObjectStore
	start  time.Time // the origin of mono: its monotonic reading is what counts
	log    zerolog.Logger
	m      *Metrics
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

// Connect connects to NATS, checks that JetStream is there, and opens (or,
// on a new cluster, creates) the buckets foreman keeps.
func Connect(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.ID == "" {
		host, _ := os.Hostname()
		host = strings.Map(func(r rune) rune { // an id is a KV key
			if r < 0x80 && (r == '-' || r == '.' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return r
			}
			return '-'
		}, host)
		opts.ID = fmt.Sprintf("%s-%d", host, os.Getpid())
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
	c := &Cluster{opts: opts, nc: nc, start: time.Now(), log: opts.Logger, m: opts.Metrics}
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
	if _, err := c.js.AccountInfo(ctx); err != nil {
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
			return fmt.Errorf("the NATS server at %s has no JetStream: start it with -js (nats-server -js -sd DIR)", c.opts.URL)
		}
		return fmt.Errorf("JetStream at %s: %w", c.opts.URL, err)
	}
	var err error
	if c.leases, err = c.js.KeyValue(ctx, LeaseBucket); errors.Is(err, jetstream.ErrBucketNotFound) {
		if !c.opts.Init {
			if name, ok := c.anyLog(ctx); ok {
				return &RefusedError{Why: fmt.Sprintf(
					"the lease bucket %s is missing, but stream %s holds a build's log: it was deleted by hand, and foreman will not guess who leads which build; stop every foreman of this cluster, then make it again with foreman cluster init",
					LeaseBucket, name)}
			}
		}
		c.leases, err = c.bucket(ctx, LeaseBucket)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", LeaseBucket, err)
	}
	if c.state, err = c.bucket(ctx, StateBucket); err != nil {
		return fmt.Errorf("%s: %w", StateBucket, err)
	}
	if c.nodes, err = c.bucket(ctx, NodeBucket); err != nil {
		return fmt.Errorf("%s: %w", NodeBucket, err)
	}
	c.snaps, err = c.js.ObjectStore(ctx, SnapshotBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		c.snaps, err = c.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: SnapshotBucket,
			Storage: jetstream.FileStorage, Replicas: c.opts.Replicas})
		if errors.Is(err, jetstream.ErrBucketExists) {
			c.snaps, err = c.js.ObjectStore(ctx, SnapshotBucket)
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", SnapshotBucket, err)
	}
	return nil
}

// bucket opens a KV bucket, creating it if it is not there yet (another
// process may be creating it at the same moment).
func (c *Cluster) bucket(ctx context.Context, name string) (jetstream.KeyValue, error) {
	kv, err := c.js.KeyValue(ctx, name)
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return kv, err
	}
	kv, err = c.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: name, History: 1,
		Storage: jetstream.FileStorage, Replicas: c.opts.Replicas})
	if errors.Is(err, jetstream.ErrBucketExists) {
		return c.js.KeyValue(ctx, name)
	}
	return kv, err
}

// anyLog names a build's log stream, if there is one.
func (c *Cluster) anyLog(ctx context.Context) (string, bool) {
	names := c.js.StreamNames(ctx)
	for n := range names.Name() {
		if strings.HasPrefix(n, streamPrefix) {
			return n, true
		}
	}
	return "", false
}

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
