package sandbox

import (
	"os"
	"path/filepath"

	"github.com/agentforeman/foreman/internal/config"
)

// Configured is the sandbox a configuration asks for: host.sandbox_*,
// host.repo's git directory (gitDir, "" if unknown) to read, and every
// file of the host's that no check may reach.
func Configured(c *config.Config, gitDir string) Config {
	home, _ := os.UserHomeDir()
	deny := []Denied{
		{Key: "host.identity", Path: c.Host.Identity},
		{Key: "server.identity", Path: c.Server.Identity},
		{Key: "host.logs", Path: c.Host.Logs},
		{Key: "host.ledger", Path: c.Host.Ledger},
		{Key: "host.work", Path: c.Host.Work},
		{Key: "journal.path", Path: c.Journal},
		{Key: "record.path", Path: c.Record},
		{Key: "cluster.creds", Path: c.Cluster.Creds},
		{Key: "cluster.tls.key", Path: c.Cluster.TLS.Key},
	}
	if c.File != "" {
		deny = append(deny, Denied{Key: "the configuration file", Path: c.File})
	}
	for i := range deny {
		if deny[i].Path != "" {
			deny[i].Path, _ = filepath.Abs(deny[i].Path)
		}
	}
	return Config{
		Net: c.Host.SandboxNet, Memory: c.Host.SandboxMemory, RO: c.Host.SandboxRO, RW: c.Host.SandboxRW, Limits: c.Host.SandboxLimits,
		GitDir: gitDir, Deny: deny, Home: home, Layers: filepath.Join(c.Host.Work, "cache-layers"), Repo: c.Host.Repo,
	}
}
