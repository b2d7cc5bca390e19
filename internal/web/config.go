package web

import (
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/agentforeman/foreman/internal/config"
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
