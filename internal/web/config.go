package web

import (
	"fmt"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/internal/config"
	"github.com/agentforeman/foreman/internal/otlp"
)

// ConfigOptions are the board's settings from the configuration, as foreman
// run and foreman up serve it.
func ConfigOptions(c *config.Config, log zerolog.Logger) Options {
	operators := c.Roles.Operators
	wo := Options{Logger: log.With().Str("part", "http").Logger(), HostLogs: c.Host.Logs,
		Operators: func() []string { return operators }, Names: c.HTTPNames}
	if c.Journal != "" {
		// Beside the journal's segments: the board's log and counters go
		// on where they were after a restart.
		wo.StateFile = filepath.Join(c.Journal, "board.json")
	}
	return wo
}

// TelemetrySecret is telemetry.secret's bytes (made on first use), nil
// when the config has none: foreman run and foreman up load it once, for
// the receiver and for every agent's token alike.
func TelemetrySecret(c *config.Config) ([]byte, error) {
	if c.Telemetry.Secret == "" {
		return nil, nil
	}
	secret, err := otlp.LoadSecret(c.Telemetry.Secret)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Origin("telemetry.secret"), err)
	}
	return secret, nil
}

// WithReceiver serves the OTLP receiver of agents' spend on the board's
// listener, its tokens made from secret (docs/BUDGETS.md), for foreman run
// and foreman up alike: the exporter environment up gives its agents, and
// foreman mcp --print-config prints, points there. Without a secret
// nothing takes exports.
func WithReceiver(o *Options, secret []byte, sink otlp.Sink) {
	if len(secret) == 0 {
		return
	}
	rec := otlp.New(otlp.Options{Secret: secret}, sink)
	o.OTLP = rec.Handler()
	o.Collectors = append(o.Collectors, rec.Collector())
}
