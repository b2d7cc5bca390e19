package pool

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/agentforeman/foreman/internal/config"
)

// Fingerprint sums up what a build is, so that a standby with another
// config for it never takes it over: its name and room, its components,
// roles and rules.
func Fingerprint(c *config.Config) string {
	data, _ := json.Marshal(struct {
		Name, URL, Channel string
		Components         any
		Roles, Rules       any
	}{c.Build.Name, c.Server.URL, c.Server.Channel, c.Build.Components, c.Roles, c.Rules})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:6])
}
