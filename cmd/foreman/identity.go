package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentforeman/foreman/agentchat"
	"github.com/agentforeman/foreman/internal/config"
)

func (a *app) identityCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "identity [CONFIG]",
		Short: "Create or show a chat identity and the agent id it gets",
		Long: `identity creates an Ed25519 identity file if it does not exist, or reads it if
it does, and prints the agent id an AgentChat server assigns to it. Without
--identity the file is foreman's own (server.identity of the config). The id
depends on the key alone, not on the display name, and is the one to list in
roles (an operator's, an auditor's) and to give agents.

The file is AgentChat's identity.json format, written with mode 0600. Anyone
holding it can speak as its owner: keep it private and out of version control.`,
		Example: `  foreman identity                              # foreman's own, from foreman.yaml
  foreman identity --identity .foreman/olga.json --name olga`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.loadConfig(cmd, configArg(args), nil)
			if err != nil {
				return err
			}
			path, _ := cmd.Flags().GetString("identity")
			if path == "" {
				path = c.Server.Identity
			}
			joins := joinName(c, path)
			name, _ := cmd.Flags().GetString("name")
			if name == "" {
				name = joins.name
			}
			if name == "" {
				name = keyName(path)
			}
			if public, _ := cmd.Flags().GetBool("public"); public {
				// For foreman verify --trust: the key alone, never made here.
				id, err := agentchat.LoadIdentity(path)
				if err != nil {
					return fmt.Errorf("identity %s: %w", path, err)
				}
				fmt.Fprint(a.stdout, id.PublicPEM())
				return nil
			}
			id, created, err := agentchat.LoadOrCreateIdentity(path, name)
			if err != nil {
				return fmt.Errorf("identity %s: %w", path, err)
			}
			showIdentity(a.stdout, path, id, created, joins)
			if !created && cmd.Flags().Changed("name") && id.Name != name {
				fmt.Fprintf(a.stdout, "The file already names its key %s; --name applies to new files only.\n", id.Name)
			}
			warnOpenIdentity(a.stdout, path)
			return nil
		},
	}
	cmd.Flags().String("identity", "", "identity file (default: server.identity, .foreman/identity.json beside the config)")
	cmd.Flags().Bool("public", false, "print the public key (PEM) of an existing identity, and nothing else: what foreman verify --trust reads")
	cmd.Flags().String("name", "", "name to store in a new identity file (default: server.name for foreman's key, host.name for the host's (host.identity), else the file's name without .json)")
	return cmd
}

// joining is the name a key's owner joins the room with when the config
// decides it rather than the key file: foreman's key (server.identity)
// joins as server.name, the host's (host.identity) as host.name.
type joining struct {
	name, key string // the name, and the key that sets it; "" when the file's own name is used
}

func joinName(c *config.Config, path string) joining {
	switch {
	case config.SamePath(path, c.Server.Identity):
		return joining{c.Server.Name, "server.name"}
	case config.SamePath(path, c.Host.Identity):
		return joining{c.Host.Name, "host.name"}
	}
	return joining{}
}

// showIdentity says what the identity file holds and what the room will
// call its owner: the name it joins with.
func showIdentity(out io.Writer, path string, id *agentchat.Identity, created bool, joins joining) {
	if created {
		fmt.Fprintf(out, "created %s (mode 0600: keep it private and out of version control)\n", path)
	} else {
		fmt.Fprintf(out, "identity %s\n", path)
	}
	fmt.Fprintf(out, "agent id: %s\n", id.AgentID())
	who := "its owner"
	switch {
	case joins.name != "":
		fmt.Fprintf(out, "name:     %s (%s: the name it joins the room with)\n", joins.name, joins.key)
		who = joins.name
	case id.Name != "":
		fmt.Fprintf(out, "name:     %s\n", id.Name)
		who = id.Name
	}
	if !id.Created.IsZero() {
		fmt.Fprintf(out, "created:  %s\n", id.Created.Format(time.RFC3339))
	}
	fmt.Fprintf(out, "An AgentChat server calls %s %s whatever its display name. A stock server\nlets a key it has never seen send only an hour after first seeing it.\n", who, id.AgentID())
}

// warnOpenIdentity warns when others may read an identity file: they could
// speak as its owner.
func warnOpenIdentity(out io.Writer, path string) bool {
	msg := openIdentityWarning(path)
	if msg != "" {
		fmt.Fprintln(out, "warning:", msg)
	}
	return msg != ""
}

func openIdentityWarning(path string) string {
	perm, open := agentchat.OpenToOthers(path)
	if !open {
		return ""
	}
	return fmt.Sprintf("identity file %s has mode %04o: others on this machine can read it and speak as its owner; chmod 600 %s", path, perm, path)
}
