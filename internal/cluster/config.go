package cluster

import (
	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/internal/config"
)

// FromConfig is how a process of role joins the cluster cluster.* names:
// foreman, its hosts, its workers and foreman cluster status all connect
// through it.
func FromConfig(c config.Cluster, role Role, log zerolog.Logger) Options {
	return Options{URL: c.NATS, ID: c.ID, Role: role, Lease: c.Lease, Replicas: c.Replicas, Logger: log}
}
