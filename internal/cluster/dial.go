package cluster

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Role is what a process does in the cluster: the inbox its answers come
// to is the role's own, so that a NATS user may be given only its role's
// (a worker cannot read what JetStream tells foreman).
type Role string

const (
	RoleForeman Role = "foreman" // leads builds: the logs, leases, snapshots, the pool
	RoleHost    Role = "host"    // checks and lands one build's work; with workers, the job queue
	RoleWorker  Role = "worker"  // runs check jobs: the job queue, results and logs only
	RoleReader  Role = "reader"  // only looks (foreman cluster status)
)

// InboxPrefix is where the answers to a role's requests come.
func (r Role) InboxPrefix() string {
	if r == "" {
		r = RoleForeman
	}
	return "_INBOX_" + string(r)
}

// Dial connects to NATS as every foreman process does: foreman run (through
// Connect), foreman host with workers, foreman worker. It is the one place
// the connection's options are made, so that whatever a secured NATS asks
// of a client (credentials, TLS) is added once, for all of them. The
// connection reconnects for ever.
func Dial(opts Options) (*nats.Conn, error) {
	nc, err := nats.Connect(opts.URL, natsOptions(opts)...)
	if err != nil {
		return nil, fmt.Errorf("cannot reach NATS at %s: %w", opts.URL, err)
	}
	return nc, nil
}

// natsOptions are the connection's options: reconnect for ever, quickly,
// and notice a dead server within about two leases.
func natsOptions(opts Options) []nats.Option {
	lease := opts.Lease
	if lease <= 0 {
		lease = DefaultLease
	}
	role := opts.Role
	if role == "" {
		role = RoleForeman
	}
	return []nats.Option{
		nats.Name("foreman " + string(role) + " " + opts.ID),
		nats.CustomInboxPrefix(role.InboxPrefix()),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(100 * time.Millisecond),
		nats.ReconnectJitter(100*time.Millisecond, time.Second),
		nats.Timeout(2 * time.Second),
		nats.PingInterval(lease),
		nats.MaxPingsOutstanding(2),
		nats.NoCallbacksAfterClientClose(),
	}
}

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
