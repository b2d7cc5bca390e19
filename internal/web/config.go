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

// WithReceiver serves the OTLP receiver of agents' spend on the board's
// listener when telemetry.secret is set (docs/BUDGETS.md), for foreman run
// and foreman up alike: the exporter environment up gives its agents, and
// foreman mcp --print-config prints, points there.
func WithReceiver(o *Options, c *config.Config, sink otlp.Sink) error {
	if c.Telemetry.Secret == "" {
		return nil
	}
	secret, err := otlp.LoadSecret(c.Telemetry.Secret)
	if err != nil {
		return fmt.Errorf("telemetry.secret: %w", err)
	}
	rec := otlp.New(otlp.Options{Secret: secret}, sink)
	o.OTLP = rec.Handler()
	o.Collectors = append(o.Collectors, rec.Collector())
	return nil
}
