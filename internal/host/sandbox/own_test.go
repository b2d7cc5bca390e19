package sandbox

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentforeman/foreman/internal/config"
)

// Every file of foreman's that a check or an agent must never reach is
// named, absolute, by its key, for the checks (Configured) as for the
// agents foreman up confines (Own): telemetry.secret too, from which any
// agent's spend token is made (the checks' list once lacked it).
func TestOwnNamesForemansFiles(t *testing.T) {
	c := &config.Config{File: "foreman.yaml", Journal: "j", Record: "r.txt"}
	c.Server.Identity, c.Host.Identity = "f.json", "h.json"
	c.Host.Work, c.Host.Logs, c.Host.Ledger = "w", "l", "h.ledger"
	c.Cluster.Creds, c.Cluster.TLS.Key = "n.creds", "n.key"
	c.Telemetry.Secret = "t.secret"
	keys := map[string]string{}
	for _, d := range Configured(c, "").Deny {
		keys[d.Key] = d.Path
	}
	for key, path := range map[string]string{"server.identity": "f.json", "host.identity": "h.json", "host.work": "w", "host.logs": "l",
		"host.ledger": "h.ledger", "journal.path": "j", "record.path": "r.txt", "cluster.creds": "n.creds", "cluster.tls.key": "n.key",
		"telemetry.secret": "t.secret", "the configuration file": "foreman.yaml"} {
		abs, _ := filepath.Abs(path)
		assert.Equal(t, abs, keys[key], key)
	}
	assert.Len(t, Own(c), len(keys)-1, "the configuration file is the checks' alone to be kept from: the agents read it")
}
