package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/config"
)

func (a *app) identityCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "identity",
		Short: "Create or show foreman's chat identity and the agent id it gets",
		Long: `identity creates foreman's Ed25519 identity file (server.identity) if it does
not exist, or reads it if it does, and prints the agent id an AgentChat server
assigns to it. The id depends on the key alone, not on the display name, and is
the one to list in other agents' and operators' configurations.

The file is AgentChat's identity.json format, written with mode 0600. Anyone
holding it can speak as foreman: keep it private and out of version control.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.settings(cmd, map[string]string{"identity": "server.identity", "name": "server.name"})
			if err != nil {
				return err
			}
			path := c.Server.Identity
			id, created, err := agentchat.LoadOrCreateIdentity(path, c.Server.Name)
			if err != nil {
				return fmt.Errorf("identity %s: %w", path, err)
			}
			out := a.stdout
			if created {
				fmt.Fprintf(out, "created %s (mode 0600: keep it private and out of version control)\n", path)
			} else {
				fmt.Fprintf(out, "identity %s\n", path)
			}
			fmt.Fprintf(out, "agent id: %s\n", id.AgentID())
			if id.Name != "" {
				fmt.Fprintf(out, "name:     %s\n", id.Name)
			}
			if !id.Created.IsZero() {
				fmt.Fprintf(out, "created:  %s\n", id.Created.Format(time.RFC3339))
			}
			fmt.Fprintf(out, "An AgentChat server calls foreman %s whatever its display name. A stock server\nlets a key it has never seen send only an hour after first seeing it.\n", id.AgentID())
			return nil
		},
	}
	cmd.Flags().String("identity", "", "identity file (default: server.identity, .foreman/identity.json)")
	cmd.Flags().String("name", "", "name to store in a new identity file (default: server.name)")
	return cmd
}

// settings loads the configuration for a command that needs only the
// server and log keys: no build is required.
func (a *app) settings(cmd *cobra.Command, flagKeys map[string]string) (*config.Config, error) {
	return a.loadConfig(cmd, "", flagKeys)
}
