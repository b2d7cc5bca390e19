package sandbox

import (
	"os"
	"path/filepath"

	"github.com/agentforeman/foreman/internal/config"
)

// Own are foreman's own files, by the keys that name them, absolute:
// nothing foreman runs for someone else (a check, an agent) may reach
// one, and no grant may hold or lie in one. Its keys (server.identity,
// host.identity), what the host keeps (host.work, host.logs,
// host.ledger), the journal and the recording, how it signs in to NATS
// (cluster.creds, cluster.tls.key), and telemetry.secret, from which
// every agent's spend token is made.
func Own(c *config.Config) []Denied {
	own := []Denied{
		{Key: "host.identity", Path: c.Host.Identity},
		{Key: "server.identity", Path: c.Server.Identity},
		{Key: "host.logs", Path: c.Host.Logs},
		{Key: "host.ledger", Path: c.Host.Ledger},
		{Key: "host.work", Path: c.Host.Work},
		{Key: "journal.path", Path: c.Journal},
		{Key: "record.path", Path: c.Record},
		{Key: "cluster.creds", Path: c.Cluster.Creds},
		{Key: "cluster.tls.key", Path: c.Cluster.TLS.Key},
		{Key: "telemetry.secret", Path: c.Telemetry.Secret},
	}
	for i := range own {
		if own[i].Path != "" {
			own[i].Path, _ = filepath.Abs(own[i].Path)
		}
	}
	return own
}

// Configured is the sandbox a configuration asks for: host.sandbox_*,
// host.repo's git directory (gitDir, "" if unknown) to read, and every
// file of the host's that no check may reach (Own, and the
// configuration file).
func Configured(c *config.Config, gitDir string) Config {
	home, _ := os.UserHomeDir()
	deny := Own(c)
	if c.File != "" {
		file, _ := filepath.Abs(c.File)
		deny = append(deny, Denied{Key: "the configuration file", Path: file})
	}
	return Config{
		Net: c.Host.SandboxNet, Memory: c.Host.SandboxMemory, RO: c.Host.SandboxRO, RW: c.Host.SandboxRW, Limits: c.Host.SandboxLimits,
		GitDir: gitDir, Deny: deny, Home: home, Layers: filepath.Join(c.Host.Work, "cache-layers"), Repo: c.Host.Repo,
	}
}
