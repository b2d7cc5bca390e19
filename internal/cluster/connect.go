package cluster

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/internal/config"
)

// JetStream joins NATS as a process of role in c's cluster and opens
// JetStream.
func JetStream(c config.Cluster, role Role, log zerolog.Logger) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := Dial(FromConfig(c, role, log.With().Str("part", "cluster").Logger()))
	if err != nil {
		return nil, nil, fmt.Errorf("cluster.nats: %w", err)
	}
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(5*time.Second))
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("cluster.nats: %w", err)
	}
	return nc, js, nil
}
